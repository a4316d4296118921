"""MCP both ways: MCP servers as tool providers, and any ToolSet served as an MCP server.

Built on the official `mcp` SDK (an optional dependency: `pip install 'jianmu-bt[mcp]'`).
Importing this package does not need the SDK; connecting to a server or building one does, and
raises MCPUnavailableError with the install command when it is missing.

- `MCPClient`: one server over stdio (`command`) or streamable HTTP (`url`), with timeouts.
- `MCPToolProvider` / `MCPTool`: a server's tools as Tools; `merge_providers_tools` refuses clashes.
- `build_mcp_server` / `serve`: a ToolSet as an MCP server; `python -m jianmu_bt.mcp serve`.
- `EnforcerGuard`: a tree's GuardEnforcer over served calls (checked and counted).
"""

from jianmu_bt.mcp.annotations import (
    DESTRUCTIVE_TAG,
    OPEN_WORLD_TAG,
    annotation_hints,
    effect_tags_from_annotations,
    parallel_safe_from_annotations,
)
from jianmu_bt.mcp.cli import add_serve_arguments, load_toolset, serve_from_args
from jianmu_bt.mcp.client import MCPClient
from jianmu_bt.mcp.config import MCPServerConfig
from jianmu_bt.mcp.errors import (
    MCPClientError,
    MCPConnectionError,
    MCPTimeoutError,
    MCPUnavailableError,
    ToolNameClashError,
)
from jianmu_bt.mcp.guarded import EnforcerGuard, ServedCallGuard
from jianmu_bt.mcp.provider import MCPTool, MCPToolProvider, local_tool_name, merge_providers_tools
from jianmu_bt.mcp.results import call_result_to_tool_result
from jianmu_bt.mcp.server import Guard, build_mcp_server, serve

__all__ = [
    "DESTRUCTIVE_TAG",
    "OPEN_WORLD_TAG",
    "EnforcerGuard",
    "Guard",
    "MCPClient",
    "MCPClientError",
    "MCPConnectionError",
    "MCPServerConfig",
    "MCPTimeoutError",
    "MCPTool",
    "MCPToolProvider",
    "MCPUnavailableError",
    "ServedCallGuard",
    "ToolNameClashError",
    "add_serve_arguments",
    "annotation_hints",
    "build_mcp_server",
    "call_result_to_tool_result",
    "effect_tags_from_annotations",
    "load_toolset",
    "local_tool_name",
    "merge_providers_tools",
    "parallel_safe_from_annotations",
    "serve",
    "serve_from_args",
]

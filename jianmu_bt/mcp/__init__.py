"""MCP both ways: MCP servers as tool providers, and any ToolSet served as an MCP server.

Built on the official `mcp` SDK (an optional dependency: `pip install 'jianmu-bt[mcp]'`).
Importing this package does not need the SDK; connecting to a server or building one does, and
raises MCPUnavailableError with the install command when it is missing.

- `MCPClient`: one server over stdio (`command`) or streamable HTTP (`url`), with timeouts; its
  tools, resources and prompts (`contents_text`, `prompt_messages` turn them into text, messages).
- `MCPToolProvider` / `MCPTool`: a server's tools as Tools; `merge_providers_tools` refuses clashes.
- `build_mcp_server` / `serve`: a ToolSet as an MCP server; `python -m jianmu_bt.mcp serve`;
  `ServedTools`: served tools that may change (clients hear `tools/list_changed`).
- `EnforcerGuard`: a tree's GuardEnforcer over served calls (checked and counted).

Each name is imported from its module on first use (`jianmu_bt._lazy`): the loader reading
`jianmu_bt.mcp.config` does not pay for the client, the server or the command line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jianmu_bt._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see
    from jianmu_bt.mcp.annotations import (
        DESTRUCTIVE_TAG as DESTRUCTIVE_TAG,
        OPEN_WORLD_TAG as OPEN_WORLD_TAG,
        annotation_hints as annotation_hints,
        effect_tags_from_annotations as effect_tags_from_annotations,
        idempotent_from_annotations as idempotent_from_annotations,
        parallel_safe_from_annotations as parallel_safe_from_annotations,
        read_only_from_annotations as read_only_from_annotations,
    )
    from jianmu_bt.mcp.cli import (
        load_toolset as load_toolset,
        serve_from_args as serve_from_args,
    )
    from jianmu_bt.mcp.client import MCPClient as MCPClient
    from jianmu_bt.mcp.config import MCPServerConfig as MCPServerConfig
    from jianmu_bt.mcp.errors import (
        MCPClientError as MCPClientError,
        MCPConnectionError as MCPConnectionError,
        MCPTimeoutError as MCPTimeoutError,
        MCPUnavailableError as MCPUnavailableError,
        ToolNameClashError as ToolNameClashError,
    )
    from jianmu_bt.mcp.guarded import (
        EnforcerGuard as EnforcerGuard,
        ServedCallGuard as ServedCallGuard,
    )
    from jianmu_bt.mcp.prompts import prompt_messages as prompt_messages
    from jianmu_bt.mcp.provider import (
        MCPTool as MCPTool,
        MCPToolProvider as MCPToolProvider,
        local_tool_name as local_tool_name,
        merge_providers_tools as merge_providers_tools,
    )
    from jianmu_bt.mcp.resources import (
        contents_text as contents_text,
        resource_listing as resource_listing,
    )
    from jianmu_bt.mcp.results import call_result_to_tool_result as call_result_to_tool_result
    from jianmu_bt.mcp.serve_options import add_serve_arguments as add_serve_arguments
    from jianmu_bt.mcp.server import (
        Guard as Guard,
        ServerPart as ServerPart,
        announce as announce,
        build_mcp_server as build_mcp_server,
        serve as serve,
    )
    from jianmu_bt.mcp.server_tools import ServedTools as ServedTools


__getattr__, __dir__ = lazy_exports(__name__, globals())

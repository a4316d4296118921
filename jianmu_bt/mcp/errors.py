"""Errors of the MCP layer, and the lazy import of the official `mcp` SDK.

The SDK is an optional dependency (`pip install 'jianmu-bt[mcp]'`): importing `jianmu_bt.mcp`
never needs it; connecting to a server or building one does, and says so clearly when it is missing.
"""

from __future__ import annotations

from types import ModuleType

INSTALL_HINT = "pip install 'jianmu-bt[mcp]' (the official `mcp` SDK, version 2.3 or newer)"


class MCPUnavailableError(ImportError):
    """The official `mcp` SDK is not installed or cannot be imported."""


class MCPClientError(RuntimeError):
    """A fault talking to an MCP server; the message names the server and what failed.

    `code` is the JSON-RPC error code when the server refused the request (-32601: method not
    found, -32602: invalid params, ...), else None.
    """

    def __init__(self, message: str, *, code: int | None = None) -> None:
        super().__init__(message)
        #: The JSON-RPC error code of the server's refusal, or None.
        self.code = code


class MCPConnectionError(MCPClientError):
    """The server could not be started or reached, or the connection to it was lost."""


class MCPTimeoutError(MCPClientError, TimeoutError):
    """The server did not answer within the configured timeout."""


class MCPContentTooLargeError(MCPClientError):
    """What a server sent is larger than this client takes (for example a prompt beyond its
    character cap); the message names the server, what was too large and the limit."""


class ToolNameClashError(ValueError):
    """Two tool sources offer a tool under the same name; the message names both sources."""


def require_mcp() -> ModuleType:
    """Import and return the `mcp` package, or raise MCPUnavailableError with an install hint."""
    try:
        import mcp
        from mcp import Client  # noqa: F401  (only in the v2 SDK: a v1 SDK fails here, early)
    except ImportError as exc:
        raise MCPUnavailableError(
            f"the MCP features need the official `mcp` SDK, which could not be imported ({exc}); "
            f"install it with: {INSTALL_HINT}"
        ) from exc
    return mcp

"""Faults of an MCP request or connection, as clear MCPClientErrors naming server and request.

The SDK reports faults in several shapes (its MCPError with JSON-RPC codes, pydantic's
ValidationError for a malformed result, anyio's stream errors, OS errors); the client turns each
into one of its own errors whose message says which server, which request and what went wrong.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import anyio

from jianmu_bt.mcp.errors import MCPClientError, MCPConnectionError, MCPTimeoutError

if TYPE_CHECKING:
    from mcp import MCPError
    from pydantic import ValidationError

# JSON-RPC error codes the SDK uses for its own failures (mcp_types constants).
REQUEST_TIMEOUT = -32001
CONNECTION_CLOSED = -32000
#: JSON-RPC "method not found": the server does not implement the request.
METHOD_NOT_FOUND = -32601


@functools.cache
def sdk_error_types() -> tuple[type[MCPError], type[ValidationError]]:
    """The SDK's MCPError and pydantic's ValidationError, imported once (the SDK is optional)."""
    from mcp import MCPError
    from pydantic import ValidationError

    return MCPError, ValidationError


def first_problem(exc: ValidationError) -> str:
    """`where: what` for the first problem of a malformed result."""
    errors = exc.errors()
    if not errors:
        return f"result: {exc}"
    where = ".".join(str(part) for part in errors[0]["loc"])
    return f"{where or 'result'}: {errors[0]['msg']}"


def request_fault(
    exc: Exception, server: str, what: str, limit: float, stderr_note: str
) -> tuple[MCPClientError, bool]:
    """The error for `exc` raised by request `what`, and whether the connection is lost."""
    if isinstance(exc, MCPClientError):
        return exc, False
    mcp_error, validation_error = sdk_error_types()
    if isinstance(exc, mcp_error):
        if exc.code == REQUEST_TIMEOUT:
            return MCPTimeoutError(
                f"MCP server '{server}' did not answer {what} within {limit}s"
            ), False
        if exc.code == CONNECTION_CLOSED:
            return MCPConnectionError(
                f"MCP server '{server}' closed the connection during {what} (the server "
                f"process may have exited){stderr_note}"
            ), True
        return MCPClientError(
            f"MCP server '{server}' rejected {what}: {exc.message} (JSON-RPC error {exc.code})",
            code=exc.code,
        ), False
    if isinstance(exc, TimeoutError):
        return MCPTimeoutError(
            f"MCP server '{server}' did not answer {what} within {limit}s"
        ), False
    if isinstance(exc, validation_error):
        return MCPClientError(
            f"MCP server '{server}' returned a malformed result for {what}: {first_problem(exc)}"
        ), False
    if isinstance(exc, anyio.BrokenResourceError | anyio.ClosedResourceError | OSError):
        return MCPConnectionError(
            f"lost the connection to MCP server '{server}' during {what}: "
            f"{type(exc).__name__}: {exc}{stderr_note}"
        ), True
    return MCPClientError(
        f"MCP server '{server}' failed {what}: {type(exc).__name__}: {exc}"
    ), False


def connect_fault(exc: BaseException, where: str, stderr_note: str) -> MCPClientError:
    """A clear error for `exc` raised while connecting to `where` (server and command/URL)."""
    if isinstance(exc, MCPClientError):
        return exc
    if isinstance(exc, FileNotFoundError):
        return MCPConnectionError(f"cannot start {where}: command not found")
    if isinstance(exc, PermissionError):
        return MCPConnectionError(f"cannot start {where}: permission denied")
    code = getattr(exc, "code", None)
    if code == CONNECTION_CLOSED:
        return MCPConnectionError(
            f"{where} closed the connection before the MCP handshake finished (did the "
            f"server process exit?){stderr_note}"
        )
    if code == REQUEST_TIMEOUT:
        return MCPTimeoutError(f"{where} did not answer the MCP handshake in time{stderr_note}")
    return MCPConnectionError(
        f"cannot connect to {where}: {type(exc).__name__}: {exc}{stderr_note}"
    )


__all__ = ["METHOD_NOT_FOUND", "connect_fault", "first_problem", "request_fault", "sdk_error_types"]

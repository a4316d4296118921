"""The transport for one server config: stdio (in a process group of its own), streamable HTTP,
or the legacy HTTP+SSE transport (`transport: sse`).

A transport is an async context manager yielding the SDK's stream pair; `Connection` enters it in
its background task. Where process groups are not supported, a stdio server runs through the
SDK's own transport.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import IO, Any, TextIO, cast

import anyio

from jianmu_bt.mcp.config import MCPServerConfig
from jianmu_bt.mcp.process_group import supported as process_groups_supported
from jianmu_bt.mcp.stdio import StderrTail, stdio_transport

__all__ = ["http_transport", "looks_like_legacy_sse", "open_transport", "sse_transport"]


def open_transport(
    config: MCPServerConfig,
    tail: StderrTail,
    errlog: IO[Any] | None,
    abrupt: Callable[[], bool] | None = None,
) -> Any:
    """The transport for `config`; a stdio server's stderr goes to `tail` (and to `errlog`).

    `abrupt()`, asked when a stdio transport closes, says whether to skip the polite exit
    (see `stdio_transport`)."""
    if config.transport == "sse":
        return sse_transport(config)
    if config.command is None:
        return http_transport(config)
    if process_groups_supported():
        return stdio_transport(
            config,
            tail,
            errlog=errlog,
            exit_grace=config.stop_grace,
            term_grace=config.stop_grace,
            abrupt=abrupt,
        )
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=config.command, args=list(config.args), env=config.env, cwd=config.cwd
    )
    # The SDK's own transport writes text: `errlog` is documented as any stream, and text
    # streams are what callers pass in practice.
    return stdio_client(params, errlog=cast(TextIO, errlog if errlog is not None else sys.stderr))


@asynccontextmanager
async def http_transport(config: MCPServerConfig) -> AsyncIterator[Any]:
    """The streamable HTTP transport to `config.url`, with `config.headers` on every request."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    # Read stays long: a streamed response may stay open for a whole tool call; every request is
    # bounded by its own timeout anyway.
    timeout = httpx2.Timeout(config.connect_timeout, read=max(300.0, config.timeout * 2))
    async with (
        httpx2.AsyncClient(headers=config.headers or None, timeout=timeout) as http,
        streamable_http_client(str(config.url), http_client=http) as streams,
    ):
        yield streams


def sse_transport(config: MCPServerConfig) -> Any:
    """The legacy HTTP+SSE transport (protocol 2024-11-05) to `config.url`, for old servers."""
    from mcp.client.sse import sse_client

    return sse_client(
        str(config.url),
        headers=config.headers or None,
        timeout=config.connect_timeout,
        sse_read_timeout=max(300.0, config.timeout * 2),
    )


async def looks_like_legacy_sse(config: MCPServerConfig, limit: float | None = None) -> bool:
    """Whether `config.url` answers a GET with an event stream that starts with the legacy
    transport's `endpoint` event (checked after streamable HTTP failed, to say why).

    The whole probe takes at most `limit` seconds (default `config.connect_timeout`)."""
    import httpx2

    limit = config.connect_timeout if limit is None else limit
    headers = {**(config.headers or {}), "Accept": "text/event-stream"}
    with anyio.move_on_after(limit):
        try:
            async with (
                httpx2.AsyncClient(timeout=httpx2.Timeout(limit)) as http,
                http.stream("GET", str(config.url), headers=headers) as response,
            ):
                kind = response.headers.get("content-type", "")
                if response.status_code != 200 or not kind.startswith("text/event-stream"):
                    return False
                async for line in response.aiter_lines():
                    if line.strip():
                        return line.strip() == "event: endpoint"
        except (httpx2.HTTPError, OSError):
            return False
    return False

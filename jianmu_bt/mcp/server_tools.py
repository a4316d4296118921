"""The served tool set, which may change while serving, and the list-changed notices it sends.

`ServedTools` holds the ToolSet a server offers and its MCP listing. Replacing it (`replace`,
`add`, `remove`, from the event loop or, with `replace_threadsafe`, from another thread) makes
every connected client that listed tools hear `notifications/tools/list_changed`:

- on the 2025 (handshake) protocol, on each such connection's standalone stream;
- on the 2026-07-28 protocol, on the client's `subscriptions/listen` stream (the server serves
  `subscriptions/listen` with the SDK's `ListenHandler` over `bus`).

```python
tools = ServedTools(ToolSet([add]))
server = build_mcp_server(tools)
await tools.add(multiply)          # clients re-list and see add and multiply
```
A tree's provider (an MCP server behind `--tree`) keeps the tools it listed at start-up; when a
provider reports new tools, whoever refreshes them passes the new set to `replace`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Iterable
from typing import Any

import anyio

from jianmu_bt.mcp.annotations import tool_annotation_hints
from jianmu_bt.mcp.results import output_schema_of
from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.toolset import ToolSet

logger = logging.getLogger(__name__)

#: Seconds one client (or the subscription bus) may take to accept a list-changed notice.
NOTICE_TIMEOUT = 5.0


def describe_tool(tool: Tool) -> Any:
    """The SDK `Tool` listing entry for one of our tools: schemas, description, annotations."""
    import mcp_types as types

    from jianmu_bt.mcp.provider import MCPTool

    schema = tool.to_schema()
    if isinstance(tool, MCPTool):
        # Served again: exactly what its own server claimed (nothing stated stays unstated).
        sent = tool.annotations
        annotations = types.ToolAnnotations.model_validate(sent) if sent is not None else None
    else:
        annotations = types.ToolAnnotations.model_validate(tool_annotation_hints(tool))
    return types.Tool(
        name=tool.name,
        description=schema["description"] or None,
        input_schema=schema["parameters"],
        output_schema=output_schema_of(tool),
        annotations=annotations,
    )


class ServedTools:
    """The tools a server offers now; changing them notifies the connected clients."""

    def __init__(self, toolset: ToolSet) -> None:
        if not isinstance(toolset, ToolSet):
            raise TypeError(f"ServedTools needs a ToolSet, got {type(toolset).__name__}")
        from mcp.server.subscriptions import InMemorySubscriptionBus

        self.bus = InMemorySubscriptionBus()
        self._listeners: weakref.WeakSet[Any] = weakref.WeakSet()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._set(toolset)

    def _set(self, toolset: ToolSet) -> None:
        import mcp_types as types

        entries = [describe_tool(t) for t in toolset]
        self.toolset = toolset
        self.listing = types.ListToolsResult(tools=entries)
        self.input_schemas = {e.name: e.input_schema for e in entries}
        self.output_schemas = {e.name: e.output_schema for e in entries}

    def listed_by(self, ctx: Any) -> None:
        """Remember the connection of a request (`ctx`) so it hears of changes."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        with contextlib.suppress(RuntimeError):
            self._loop = asyncio.get_running_loop()
        # The SDK's per-request session proxies one connection; its standalone stream is where
        # 2025-era change notices go (2026-era clients listen with subscriptions/listen).
        connection = getattr(ctx.session, "_connection", None)
        if connection is not None and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self._listeners.add(connection)

    @property
    def listeners(self) -> int:
        """Connections (2025 protocol) that will be told of changes."""
        return len(self._listeners)

    async def replace(self, toolset: ToolSet) -> None:
        """Serve `toolset` from now on and tell the clients the list changed."""
        from mcp.server.subscriptions import ToolsListChanged

        if not isinstance(toolset, ToolSet):
            raise TypeError(f"replace needs a ToolSet, got {type(toolset).__name__}")
        self._set(toolset)
        # Best effort, each notice bounded: a stuck or gone client must not hold up the change
        # (nor the other clients' notices).
        with anyio.move_on_after(NOTICE_TIMEOUT):
            try:
                await self.bus.publish(ToolsListChanged())
            except Exception as exc:
                logger.warning("the tools/list_changed notice to subscribers failed: %r", exc)
        for connection in list(self._listeners):
            with anyio.move_on_after(NOTICE_TIMEOUT) as scope:
                try:
                    await connection.send_tool_list_changed()
                except Exception as exc:
                    logger.warning("a client was not told the tool list changed: %r", exc)
            if scope.cancelled_caught:
                logger.warning(
                    "a client did not take the tools/list_changed notice within %ss",
                    NOTICE_TIMEOUT,
                )

    async def add(self, *tools: Tool) -> None:
        """Add (or replace, by name) tools and notify."""
        await self.replace(self.toolset.with_tools(tools))

    async def remove(self, *names: str) -> None:
        """Stop serving the named tools and notify (unknown names: KeyError)."""
        gone = {self.toolset[name].name for name in names}
        await self.replace(ToolSet([t for t in self.toolset if t.name not in gone]))

    def replace_threadsafe(self, toolset: ToolSet) -> None:
        """`replace` from a thread other than the server's (once a client has listed tools)."""
        if self._loop is None:
            self._set(toolset)  # nobody listed yet: nobody to tell
            return
        asyncio.run_coroutine_threadsafe(self.replace(toolset), self._loop).result(timeout=30)


def as_served(tools: ToolSet | ServedTools | Iterable[Tool]) -> ServedTools:
    """`tools` as ServedTools (a ToolSet is wrapped; ServedTools is used as it is)."""
    if isinstance(tools, ServedTools):
        return tools
    if not isinstance(tools, ToolSet):
        raise TypeError(f"build_mcp_server needs a ToolSet, got {type(tools).__name__}")
    return ServedTools(tools)


__all__ = ["ServedTools", "as_served", "describe_tool"]

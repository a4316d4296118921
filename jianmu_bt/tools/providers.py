"""ToolProvider: the lifecycle protocol of a dynamic source of tools (built-ins, MCP servers)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from jianmu_bt.tools.base import Tool


@runtime_checkable
class ToolProvider(Protocol):
    """A source of tools with a lifecycle: `initialize`, then `get_tools`, then `close`.

    `initialize` may connect to something (an MCP server); `get_tools` is synchronous and returns
    what is available now; `close` releases whatever `initialize` acquired.
    """

    async def initialize(self) -> None:
        """Acquire resources (connect, start a process). Called once before `get_tools`."""
        ...

    def get_tools(self, **kwargs: Any) -> list[Tool]:
        """The tools this provider offers now."""
        ...

    async def close(self) -> None:
        """Release what `initialize` acquired. Safe to call more than once."""
        ...


class BaseToolProvider:
    """A ToolProvider whose lifecycle methods do nothing; subclass and override what you need."""

    async def initialize(self) -> None:
        """Nothing to acquire."""

    def get_tools(self, **kwargs: Any) -> list[Tool]:
        """No tools."""
        return []

    async def close(self) -> None:
        """Nothing to release."""

    async def __aenter__(self) -> BaseToolProvider:
        await self.initialize()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

"""Listeners of what an MCP server announces (`notifications/tools/list_changed`).

The SDK hands every server notification to one message handler, in a task of the connection;
the client keeps a `Listeners` per kind of notice and awaits each listener there. A listener
that fails is logged and skipped: it must not break the connection or the other listeners.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

logger = logging.getLogger(__name__)

Listener = Callable[[], Awaitable[None]]
"""Awaited once per notice."""


class Listeners:
    """The listeners of one kind of notice, awaited in the order they were added."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._listeners: list[Listener] = []

    def add(self, listener: Listener) -> Callable[[], None]:
        """Await `listener()` on every notice; returns a function that removes it."""
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    async def notify(self, server: str) -> None:
        """Await every listener (their faults are logged, naming `server`)."""
        for listener in list(self._listeners):
            try:
                await listener()
            except Exception:
                logger.exception("MCP server '%s': a %s listener failed", server, self.what)


def is_tools_changed(message: Any) -> bool:
    """Whether an SDK message is `notifications/tools/list_changed`."""
    from mcp_types import ToolListChangedNotification

    return isinstance(message, ToolListChangedNotification)


__all__ = ["Listener", "Listeners", "is_tools_changed"]

"""Listeners of what an MCP server announces (`notifications/tools/list_changed`).

The SDK hands every server notification to one message handler, in a task of the connection;
the client keeps a `Listeners` per kind of notice and awaits each listener there (a provider
keeps one for its rebuilt tool lists). A listener may be sync or async; one that fails is
logged and skipped: it must not break the connection or the other listeners.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

logger = logging.getLogger(__name__)

Listener = Callable[..., "Awaitable[None] | None"]
"""Called (and awaited, when it returns an awaitable) once per notice, with the notice's
arguments (none for a client's notices)."""


class Listeners:
    """The listeners of one kind of notice, awaited in the order they were added."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._listeners: list[Listener] = []

    def add(self, listener: Listener) -> Callable[[], None]:
        """Call `listener(*args)` on every notice; returns a function that removes it."""
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove

    async def notify(self, server: str, *args: Any) -> None:
        """Call (and await) every listener with `args`; their faults are logged, naming
        `server`."""
        for listener in list(self._listeners):
            try:
                outcome = listener(*args)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                logger.exception("MCP server '%s': a %s listener failed", server, self.what)


def is_tools_changed(message: Any) -> bool:
    """Whether an SDK message is `notifications/tools/list_changed`."""
    from mcp_types import ToolListChangedNotification

    return isinstance(message, ToolListChangedNotification)


__all__ = ["Listener", "Listeners", "is_tools_changed"]

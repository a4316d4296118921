"""CallDeadlines: the deadlines of a client's calls in flight, held while the client answers.

A server may ask its client something in the middle of a tool call (elicitation: a question for
a person). The time a person takes must not count against the call's `timeout`: while any such
request is being answered, every call's deadline is held (set to infinity), and when the last one
ends each deadline is set again with the time the call had left. Progress that restarts a call's
idle timeout during a hold restarts it from the end of the hold.

Everything runs in the client's event loop (no locks needed).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import anyio


class CallDeadlines:
    """The deadline scopes of one client's calls; `held()` stops their clocks."""

    def __init__(self) -> None:
        self._scopes: set[anyio.CancelScope] = set()
        #: While held: each scope's seconds left when the hold began (or was restarted).
        self._left: dict[anyio.CancelScope, float] = {}
        self._holds = 0

    @property
    def holding(self) -> bool:
        """True while at least one request is being answered."""
        return self._holds > 0

    @contextmanager
    def track(self, scope: anyio.CancelScope | None) -> Iterator[None]:
        """Register a call's deadline scope for as long as the call runs (None: no-op)."""
        if scope is None:
            yield
            return
        self._scopes.add(scope)
        if self._holds:
            self._hold(scope)
        try:
            yield
        finally:
            self._scopes.discard(scope)
            self._left.pop(scope, None)

    def restart(self, scope: anyio.CancelScope, seconds: float) -> None:
        """Give a call `seconds` from now (or from the end of the current hold)."""
        if self._holds and scope in self._scopes:
            self._left[scope] = seconds
        else:
            scope.deadline = anyio.current_time() + seconds

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold every call's deadline for the duration of the block (nested holds add up)."""
        self._holds += 1
        if self._holds == 1:
            for scope in self._scopes:
                self._hold(scope)
        try:
            yield
        finally:
            self._holds -= 1
            if not self._holds:
                now = anyio.current_time()
                for scope, left in self._left.items():
                    scope.deadline = now + left
                self._left.clear()

    def _hold(self, scope: anyio.CancelScope) -> None:
        self._left[scope] = max(0.0, scope.deadline - anyio.current_time())
        scope.deadline = math.inf

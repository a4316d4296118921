"""The viewer's event log: every event a page is sent, numbered from 1, kept for late readers.

Sources (a live run, a trace, a durable run's history) `publish` events from any thread; each gets
the next number, which is its Server-Sent Events id. A page that reconnects sends the last id it
saw (`Last-Event-ID`) and gets the events after it, so nothing is missed or repeated. Waiting
readers are asyncio tasks of the server's loop: a publish wakes them with
`call_soon_threadsafe`, never from the publishing thread directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from typing import Any

from pydantic_core import to_jsonable_python


def encode(event: dict[str, Any]) -> str:
    """An event as one line of JSON (values JSON cannot hold become their `str()`)."""
    return json.dumps(to_jsonable_python(event, fallback=str), ensure_ascii=False)


class EventHub:
    """A numbered, append-only list of encoded events with async waiting for new ones."""

    def __init__(self) -> None:
        self._events: list[str] = []
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self._finished = False

    def publish(self, event: dict[str, Any]) -> int:
        """Append `event` (a dict with `type`) and wake the readers; returns its id."""
        line = encode(event)
        with self._lock:
            if self._finished:
                return len(self._events)
            self._events.append(line)
            number = len(self._events)
            waiters, self._waiters = self._waiters, []
        self._wake(waiters)
        return number

    def finish(self) -> None:
        """No more events will come (the run ended, or the trace was read): readers end."""
        with self._lock:
            self._finished = True
            waiters, self._waiters = self._waiters, []
        self._wake(waiters)

    @property
    def finished(self) -> bool:
        """True once `finish` was called."""
        return self._finished

    def __len__(self) -> int:
        return len(self._events)

    def after(self, last_id: int) -> list[tuple[int, str]]:
        """(id, encoded event) for every event with an id above `last_id`."""
        with self._lock:
            start = max(0, last_id)
            return list(enumerate(self._events[start:], start=start + 1))

    async def wait(self, last_id: int, timeout: float) -> None:
        """Return when an event after `last_id` exists, the hub finished, or `timeout` passed."""
        loop = asyncio.get_running_loop()
        ready = asyncio.Event()
        with self._lock:
            if len(self._events) > last_id or self._finished:
                return
            self._waiters.append((loop, ready))
        try:
            await asyncio.wait_for(ready.wait(), timeout)
        except TimeoutError:
            pass
        finally:
            with self._lock:
                if (loop, ready) in self._waiters:
                    self._waiters.remove((loop, ready))

    @staticmethod
    def _wake(waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]) -> None:
        for loop, ready in waiters:
            # RuntimeError: that reader's loop has closed, nobody to wake.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(ready.set)

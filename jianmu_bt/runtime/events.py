"""Run events: what happened during a run, for live views, traces and tests.

Nodes and the runner emit `Event`s to an `EventBus`; subscribers are plain callables. Event types
used by the framework:

| type | emitted when | data |
|---|---|---|
| `tree.tick` | the runner ticked the tree | `tick`, `status` |
| `tree.finished` | a run ended | `status`, `ticks`, `reason` |
| `node.status` | a node's status changed during a tick | `node`, `id`, `kind`, `old`, `new` |
| `tool.call.started` | a tool call begins | `tool`, `call_id`, `arguments` |
| `tool.call.completed` | a tool call succeeded | `tool`, `call_id`, `output`, `duration` |
| `tool.call.failed` | a tool call failed | `tool`, `call_id`, `error`, `duration` |
| `tool.call.retry` | a failed call is retried | `tool`, `call_id`, `attempt`, `delay` |
| `guard.decision` | the guard refused or held a call | `tool`, `call_id`, `decision`, `reason` |
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

logger = logging.getLogger(__name__)

EventCallback = Callable[["Event"], None]


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened: a dotted type, the node it concerns, data and a wall-clock time."""

    type: str
    node: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    time: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (`type`, `node`, `time` and the data's keys)."""
        return {"type": self.type, "node": self.node, "time": self.time, **self.data}


class EventBus:
    """Delivers events to subscribers synchronously, in subscription order.

    A subscriber that raises is logged and skipped; it never breaks the run that emitted the event.
    """

    __slots__ = ("_subscribers",)

    def __init__(self) -> None:
        self._subscribers: list[EventCallback] = []

    def subscribe(self, callback: EventCallback) -> Callable[[], None]:
        """Call `callback(event)` for every event; returns a function that unsubscribes."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    @property
    def active(self) -> bool:
        """True when someone listens (lets emitters skip building event data)."""
        return bool(self._subscribers)

    def emit(self, type: str, node: str | None = None, **data: Any) -> None:
        """Build an event and deliver it (nothing is built when nobody listens)."""
        if not self._subscribers:
            return
        event = Event(type=type, node=node, data=data)
        for callback in list(self._subscribers):
            try:
                callback(event)
            except Exception:
                logger.exception("event subscriber %r failed on %s", callback, type)


class TraceWriter:
    """A subscriber that appends each event as one JSON line to a file (a run's trace)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file: TextIO | None = self.path.open("w", encoding="utf-8")

    def __call__(self, event: Event) -> None:
        if self._file is not None:
            self._file.write(json.dumps(event.to_dict(), default=str, ensure_ascii=False) + "\n")
            self._file.flush()

    def close(self) -> None:
        """Close the file; later events are ignored."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def read_trace(path: str | Path) -> list[dict[str, Any]]:
    """The events of a JSONL trace file, as dicts."""
    with Path(path).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]

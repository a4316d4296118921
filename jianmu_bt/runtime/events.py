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
| `mcp.sampling` | a sampling request ended | `server`, `outcome`, `reason`, `model`, `*_tokens` |
| `input.requested` | an MCP server asks the user | `question_id`, `server`, `message`, `schema` |
| `input.answered` | a question closed | `question_id`, `server`, `action`, `reason`, `by` |
| `input.refused` | a server asked past its `max_requests` | `server`, `reason` |

`TraceWriter` writes a run's events as JSON Lines (a trace); `read_trace_file` / `read_trace` is
the one reader of traces (what a trace records beyond the run's own events: `viz.trace_status`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from jianmu_bt.store.private_files import open_private

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
        # A tuple, replaced on (un)subscribing: every run has a bus, few have subscribers, and
        # the empty tuple is shared; an emit walks the subscribers of its moment, uncopied.
        self._subscribers: tuple[EventCallback, ...] = ()

    def subscribe(self, callback: EventCallback) -> Callable[[], None]:
        """Call `callback(event)` for every event; returns a function that unsubscribes."""
        self._subscribers = (*self._subscribers, callback)

        def unsubscribe() -> None:
            subscribers = list(self._subscribers)
            if callback in subscribers:
                subscribers.remove(callback)
                self._subscribers = tuple(subscribers)

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
        for callback in self._subscribers:
            try:
                callback(event)
            except Exception:
                logger.exception("event subscriber %r failed on %s", callback, type)


class TraceWriter:
    """A subscriber that appends each event as one JSON line to a file (a run's trace), created
    readable by its owner only."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        # Private: a trace holds the run's state, arguments and results.
        self._file: TextIO | None = open_private(self.path, "w")

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


#: The trace format this version writes and reads: the `format` of a trace's `tree.nodes`
#: event (a trace without one is version 1); a newer trace is refused with a message.
TRACE_FORMAT = 1
_WRITE_ONE = "write one with `jianmu run FILE --trace OUT.jsonl`"


class TraceFormatError(ValueError):
    """A file that cannot be read as a trace (missing, not JSON Lines of events, a newer
    format); the message names the file and line."""


@dataclass
class TraceFile:
    """A trace's events (as dicts, in order) and what was wrong with it but could be read."""

    path: Path
    events: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def read_trace_file(path: str | Path) -> TraceFile:
    """The trace at `path` with its warnings: the one trace reader (`read_trace`,
    `jianmu dot --status-from`, `jianmu view --trace` all use it).

    A last line cut off mid-write (a run killed while writing) is left out with a warning, as is
    a trace without `tree.finished`; anything else that is not JSON Lines of events, or a trace
    of a newer `format`, raises TraceFormatError naming the file and line."""
    source = Path(path)
    if not source.is_file():
        raise TraceFormatError(f"{source}: {'not a file' if source.exists() else 'no such file'}")
    try:
        text = source.read_bytes().decode("utf-8")
    except OSError as exc:
        raise TraceFormatError(f"{source}: cannot read it ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise TraceFormatError(f"{source}: not a trace (not UTF-8 text; {_WRITE_ONE})") from None
    trace = TraceFile(source)
    lines = text.split("\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    if last < 0:
        raise TraceFormatError(f"{source}: empty, not a trace ({_WRITE_ONE})")
    for index, line in enumerate(lines[: last + 1]):
        if not line.strip():
            continue
        problem, event = _parse_event(line)
        if problem:
            if index == last and not text.endswith("\n") and trace.events:
                trace.warnings.append(
                    f"{source}:{index + 1}: the trace is truncated: its last line is cut off (the "
                    f"run was stopped while writing); showing the {len(trace.events)} events "
                    "before it"
                )
                break
            raise TraceFormatError(f"{source}:{index + 1}: {problem}: not a trace ({_WRITE_ONE})")
        _check_format(source, index + 1, event)
        trace.events.append(event)
    if not any(event.get("type") == "tree.finished" for event in trace.events):
        trace.warnings.append(
            f"{source}: the trace ends before the run finished (no tree.finished event): the "
            "run is still going, or it was stopped"
        )
    return trace


def read_trace(path: str | Path) -> list[dict[str, Any]]:
    """The events of a JSONL trace file, as dicts (see `read_trace_file`)."""
    return read_trace_file(path).events


def _parse_event(line: str) -> tuple[str, dict[str, Any]]:
    """("", event), or (what is wrong, {})."""
    try:
        event = json.loads(line)
    except json.JSONDecodeError as exc:
        return f"not a JSON line ({exc.msg})", {}
    except RecursionError:
        return "not a JSON line (nested too deeply)", {}
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        return "not an event (a JSON object with a 'type')", {}
    return "", event


def _check_format(source: Path, number: int, event: dict[str, Any]) -> None:
    version = event.get("format")
    if version is None:
        return
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise TraceFormatError(f"{source}:{number}: not a trace: 'format' is {version!r}")
    if version > TRACE_FORMAT:
        raise TraceFormatError(
            f"{source}:{number}: this trace was written in trace format {version}, newer than "
            f"this jianmu reads (format {TRACE_FORMAT}): upgrade jianmu-bt to view it"
        )

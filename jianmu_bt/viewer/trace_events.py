"""What a trace records for replay, and reading a trace file back with its faults named.

A trace (JSON Lines, one run event a line, `TraceWriter`) is replayed by the viewer. Two kinds of
events make a replay complete, and `jianmu run --trace` writes both:

- `tree.nodes` first: the tree's nodes in pre-order with their parents, and `format`, the trace
  format's version (`TRACE_FORMAT`); a trace without `format` is version 1.
- `state.write` after each write to the run's state: `keys` and their new `values` (the first one,
  `initial: true`, holds the whole state at the start), so the state at any event can be rebuilt.

`read_trace_file` accepts a trace whose last line was cut off (a run killed while writing) and
says so in its warnings; a file that is not a trace, or was written by a newer format, raises
TraceProblem with the file and line.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_core import to_jsonable_python

#: The trace format this version writes and reads (newer traces are refused with a message).
TRACE_FORMAT = 1
#: The event type of a state write in a trace.
STATE_WRITE_EVENT = "state.write"


class TraceProblem(ValueError):
    """A file that cannot be replayed: missing, not a trace, or from a newer trace format."""


@dataclass
class TraceFile:
    """A trace's events (as dicts, in order) and what was wrong with it but could be read."""

    path: Path
    events: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _jsonable(value: Any) -> Any:
    return to_jsonable_python(value, fallback=str)


# One state listener per state, however many recorders ask (a run viewed and traced at once
# must not record each write twice): id(state) -> [recorders, unsubscribe, state].
_listeners: dict[int, list[Any]] = {}
_listeners_lock = threading.Lock()


def record_state_writes(tree: Any) -> Callable[[], None]:
    """Emit `state.write` events on `tree.events` for every write to `tree.state`, starting
    with the whole state now; returns the function that stops it."""
    state, events = tree.state, tree.events
    events.emit(STATE_WRITE_EVENT, keys=list(state.fields), values=state.snapshot(), initial=True)

    def written(keys: frozenset[str]) -> None:
        if not events.active:
            return
        ordered = sorted(keys)
        values = {key: _jsonable(state.get(key)) for key in ordered}
        events.emit(STATE_WRITE_EVENT, keys=ordered, values=values)

    with _listeners_lock:
        entry = _listeners.get(id(state))
        if entry is None or entry[2] is not state:  # (an id is reused once its state is gone)
            entry = _listeners[id(state)] = [0, state.subscribe(written), state]
        entry[0] += 1
    stopped = False

    def stop() -> None:
        nonlocal stopped
        with _listeners_lock:
            if stopped:
                return
            stopped = True
            entry[0] -= 1
            if entry[0] == 0:
                entry[1]()
                if _listeners.get(id(state)) is entry:
                    del _listeners[id(state)]

    return stop


def read_trace_file(path: str | Path) -> TraceFile:
    """The events of the trace at `path`; TraceProblem when it cannot be replayed at all."""
    source = Path(path)
    if not source.exists():
        raise TraceProblem(f"{source}: no such file")
    if not source.is_file():
        raise TraceProblem(f"{source}: not a file")
    try:
        raw = source.read_bytes()
    except OSError as exc:
        raise TraceProblem(f"{source}: cannot read it ({exc.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TraceProblem(
            f"{source}: not a trace (not UTF-8 text; a trace is JSON Lines)"
        ) from None
    trace = TraceFile(source)
    lines = text.split("\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    if last < 0:
        raise TraceProblem(f"{source}: empty, not a trace (write one with `jianmu run --trace`)")
    for index, line in enumerate(lines[: last + 1]):
        if not line.strip():
            continue
        number = index + 1
        event = _parse(line)
        if event is None:
            if index == last and not text.endswith("\n") and trace.events:
                trace.warnings.append(
                    f"{source}:{number}: the trace is truncated: its last line is cut off (the "
                    f"run was stopped while writing); showing the {len(trace.events)} events "
                    "before it"
                )
                break
            what = "the first line" if not trace.events else f"line {number}"
            raise TraceProblem(
                f"{source}:{number}: not a trace: {what} is not a JSON run event "
                "(an object with a 'type'); write one with `jianmu run FILE --trace OUT.jsonl`"
            )
        _check_format(source, number, event)
        trace.events.append(event)
    if not any(event.get("type") == "tree.finished" for event in trace.events):
        trace.warnings.append(
            f"{source}: the trace ends before the run finished (no tree.finished event): the "
            "run is still going, or it was stopped"
        )
    return trace


def _parse(line: str) -> dict[str, Any] | None:
    try:
        event = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        return None
    return event


def _check_format(source: Path, number: int, event: dict[str, Any]) -> None:
    version = event.get("format")
    if version is None:
        return
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise TraceProblem(f"{source}:{number}: not a trace: 'format' is {version!r}")
    if version > TRACE_FORMAT:
        raise TraceProblem(
            f"{source}:{number}: this trace was written in trace format {version}, newer than "
            f"this jianmu reads (format {TRACE_FORMAT}): upgrade jianmu-bt to view it"
        )

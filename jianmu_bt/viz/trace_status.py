"""What a run's JSONL trace records beyond the run's events, and node statuses read back from it.

`jianmu run --trace` writes, besides the run's events: a `tree.nodes` event first (the tree's
nodes in pre-order with their parents and kinds, `tree_nodes_data`, and `format`, the trace
format's version `TRACE_FORMAT`) and a `state.write` event after each write to the run's state
(`record_state_writes`), so a replay (`jianmu view --trace`) shows the state at every event.
`load_trace` reads a trace back (the one reader, `runtime.events.read_trace_file`).

A trace (written by `TraceWriter`, e.g. `jianmu run FILE --trace run.jsonl`) holds `node.status`
events with each node's py_trees id; the last one per id is that node's final status. Loading
the tree file again gives new ids, so `statuses_for_tree` maps the trace onto a tree:

1. by id, when the trace came from this very tree object;
2. by position, when the trace holds a `tree.nodes` event (the tree's nodes in pre-order with
   their ids and names; `jianmu run --trace` writes one first) and the names still match;
3. by name, for names that occur once in the tree and once in the trace.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import py_trees
from py_trees.common import Status
from pydantic_core import to_jsonable_python

from jianmu_bt.runtime.events import TRACE_FORMAT, TraceFile, TraceFormatError, read_trace_file
from jianmu_bt.viz.kinds import describe_node
from jianmu_bt.viz.traversal import as_status, walk

__all__ = [
    "STATE_WRITE_EVENT",
    "TRACE_FORMAT",
    "TREE_NODES_EVENT",
    "TraceFile",
    "TraceFormatError",
    "last_statuses",
    "load_trace",
    "read_trace_file",
    "record_state_writes",
    "statuses_for_tree",
    "trace_ids_by_position",
    "tree_nodes_data",
]

#: The event type that records a tree's nodes in pre-order (see `tree_nodes_data`).
TREE_NODES_EVENT = "tree.nodes"
#: The event type of a write to the run's state (see `record_state_writes`).
STATE_WRITE_EVENT = "state.write"


def load_trace(path: str | Path) -> list[dict[str, Any]]:
    """The events of a JSONL trace file as dicts (`runtime.events.read_trace_file`: a last line
    cut off mid-write is left out; a bad line raises TraceFormatError naming file and line)."""
    return read_trace_file(path).events


def last_statuses(events: Iterable[Mapping[str, Any]]) -> dict[str, Status]:
    """The last status of each node id seen in `node.status` events."""
    statuses: dict[str, Status] = {}
    for event in events:
        if event.get("type") != "node.status":
            continue
        status = as_status(event.get("new"))
        if status is not None and event.get("id") is not None:
            statuses[str(event["id"])] = status
    return statuses


def tree_nodes_data(root: py_trees.behaviour.Behaviour) -> list[dict[str, Any]]:
    """The tree's nodes in pre-order as `{"index", "id", "name", "kind", "class", "parent"}` (a
    `tree.nodes` event; `kind` as `viz.kinds.describe_node` names it, `class` the behaviour's
    class, `parent` the parent's index, None for the root)."""
    nodes = list(walk(root))
    index_of = {id(node): index for index, node in enumerate(nodes)}
    return [
        {
            "index": index,
            "id": str(node.id),
            "name": node.name,
            "kind": describe_node(node).kind,
            "class": type(node).__name__,
            "parent": index_of.get(id(node.parent)) if node.parent is not None else None,
        }
        for index, node in enumerate(nodes)
    ]


def statuses_for_tree(
    root: py_trees.behaviour.Behaviour, events: Iterable[Mapping[str, Any]]
) -> dict[str, Status]:
    """The trace's final statuses keyed by this tree's node ids (see the module docstring)."""
    events = list(events)
    by_trace_id = last_statuses(events)
    nodes = list(walk(root))
    result = {str(n.id): by_trace_id[str(n.id)] for n in nodes if str(n.id) in by_trace_id}
    if result:
        return result
    by_position = trace_ids_by_position([node.name for node in nodes], events)
    for node, trace_id in zip(nodes, by_position, strict=True):
        status = by_trace_id.get(trace_id) if trace_id is not None else None
        if status is not None:
            result[str(node.id)] = status
    if result:
        return result
    return _match_by_name(nodes, events, by_trace_id)


def trace_ids_by_position(
    names: Sequence[str], events: Iterable[Mapping[str, Any]]
) -> list[str | None]:
    """For each node (pre-order `names` of a tree), the id the trace's last `tree.nodes` event
    gives the node at the same position when its name agrees; all None when the trace has no
    layout or one of another size."""
    layouts = [e.get("nodes") for e in events if e.get("type") == TREE_NODES_EVENT]
    layout = layouts[-1] if layouts else None
    if not isinstance(layout, list) or len(layout) != len(names):
        return [None] * len(names)
    return [
        str(entry.get("id")) if isinstance(entry, Mapping) and entry.get("name") == name else None
        for entry, name in zip(layout, names, strict=True)
    ]


def _match_by_name(
    nodes: list[py_trees.behaviour.Behaviour],
    events: list[Mapping[str, Any]],
    by_trace_id: Mapping[str, Status],
) -> dict[str, Status]:
    trace_ids_by_name: dict[str, set[str]] = {}
    for event in events:
        if event.get("type") == "node.status" and event.get("id") is not None:
            trace_ids_by_name.setdefault(str(event.get("node")), set()).add(str(event["id"]))
    tree_names = Counter(node.name for node in nodes)
    result: dict[str, Status] = {}
    for node in nodes:
        trace_ids = trace_ids_by_name.get(node.name, set())
        if tree_names[node.name] == 1 and len(trace_ids) == 1:
            result[str(node.id)] = by_trace_id[next(iter(trace_ids))]
    return result


# One state listener per state, however many recorders ask (a run viewed and traced at once
# must not record each write twice): id(state) -> [recorders, unsubscribe, state].
_listeners: dict[int, list[Any]] = {}
_listeners_lock = threading.Lock()


def record_state_writes(tree: Any) -> Callable[[], None]:
    """Emit `state.write` events (`keys`, their new `values`) on `tree.events` for every write
    to `tree.state`, starting with the whole state now (`initial: true`), so a replay rebuilds
    the state at any event (`jianmu run --trace`, the viewer); returns the function that stops
    it. However many ask at once, each write is emitted once."""
    state, events = tree.state, tree.events
    events.emit(STATE_WRITE_EVENT, keys=list(state.fields), values=state.snapshot(), initial=True)

    def written(keys: frozenset[str]) -> None:
        if not events.active:
            return
        ordered = sorted(keys)
        values = {key: to_jsonable_python(state.get(key), fallback=str) for key in ordered}
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

"""Node statuses from a run's JSONL trace, for colouring a drawing of the tree afterwards.

A trace (written by `TraceWriter`, e.g. `jianmu run FILE --trace run.jsonl`) holds `node.status`
events with each node's py_trees id; the last one per id is that node's final status. Loading
the tree file again gives new ids, so `statuses_for_tree` maps the trace onto a tree:

1. by id, when the trace came from this very tree object;
2. by position, when the trace holds a `tree.nodes` event (the tree's nodes in pre-order with
   their ids and names; `jianmu run --trace` writes one first) and the names still match;
3. by name, for names that occur once in the tree and once in the trace.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import py_trees
from py_trees.common import Status

from jianmu_bt.viz.traversal import as_status, walk

#: The event type that records a tree's nodes in pre-order (see `tree_nodes_data`).
TREE_NODES_EVENT = "tree.nodes"


class TraceFormatError(ValueError):
    """A trace file that is not JSON Lines of event objects; the message names file and line."""


def load_trace(path: str | Path) -> list[dict[str, Any]]:
    """The events of a JSONL trace file as dicts; a bad line raises TraceFormatError."""
    source = Path(path)
    events: list[dict[str, Any]] = []
    with source.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TraceFormatError(f"{source}:{number}: not a JSON line ({exc.msg})") from None
            if not isinstance(event, dict) or not isinstance(event.get("type"), str):
                raise TraceFormatError(f"{source}:{number}: not an event (an object with 'type')")
            events.append(event)
    return events


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
    """The tree's nodes in pre-order as `{"index", "id", "name", "kind", "parent"}` (a
    `tree.nodes` event; `parent` is the parent's index, None for the root)."""
    nodes = list(walk(root))
    index_of = {id(node): index for index, node in enumerate(nodes)}
    return [
        {
            "index": index,
            "id": str(node.id),
            "name": node.name,
            "kind": type(node).__name__,
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
    layouts = [e.get("nodes") for e in events if e.get("type") == TREE_NODES_EVENT]
    layout = layouts[-1] if layouts else None
    if isinstance(layout, list) and len(layout) == len(nodes):
        for entry, node in zip(layout, nodes, strict=True):
            if isinstance(entry, Mapping) and entry.get("name") == node.name:
                status = by_trace_id.get(str(entry.get("id")))
                if status is not None:
                    result[str(node.id)] = status
        if result:
            return result
    return _match_by_name(nodes, events, by_trace_id)


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

"""What a viewer shows: a source gives the tree's view, the events, and takes decisions.

- `live_source(tree)`: a run in this process; its events (and state writes) stream as they come;
  held calls can be approved or denied (with the token), exactly as at the terminal.
- `trace_source(path, tree=None)`: a trace file replayed; faults become `problems` on the page.
- `history_source(store, run_id, tree=None)`: a durable run's journal and checkpoints replayed.
- `static_source(tree)`: just the tree (`jianmu view FILE`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jianmu_bt.viewer.history import run_history_events
from jianmu_bt.viewer.hub import EventHub
from jianmu_bt.viewer.trace_events import TraceProblem, read_trace_file, record_state_writes
from jianmu_bt.viewer.tree_view import TreeView, view_of_trace_nodes, view_of_tree
from jianmu_bt.viz.trace_status import TREE_NODES_EVENT

#: The reason a denied call's agent reads when the reviewer in the browser gave none.
DENIED_IN_VIEWER = "the reviewer in the viewer said no"
#: The event recorded on the run's bus (so in its trace) for each decision made on the page.
DECISION_EVENT = "approval.decided"


class DecisionError(Exception):
    """A decision the page asked for that cannot be made; `status` is the HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Source:
    """A view's tree, its events and (for a live run) the way to answer held calls."""

    mode: str  # live | replay | static
    view: TreeView
    hub: EventHub = field(default_factory=EventHub)
    problems: list[str] = field(default_factory=list)
    tree: Any = None
    #: `fork(seq)` -> the new run's id, for a durable run's history (None: no forking).
    fork: Callable[[int], str] | None = None
    _closers: list[Callable[[], None]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def pending(self) -> list[dict[str, Any]]:
        """The calls waiting for a reviewer now (live runs only)."""
        if self.mode != "live" or self.tree is None:
            return []
        return [
            {"call_id": r.call_id, "tool": r.tool, "arguments": r.arguments}
            for r in self.tree.pending_approvals()
        ]

    def decide(self, call_id: str, approve: bool, reason: str = "") -> dict[str, Any]:
        """Approve or deny a held call of the live run, as the terminal's reviewer would."""
        if self.mode != "live" or self.tree is None:
            raise DecisionError(409, "this view is a replay: there is no run to decide for")
        with self._lock:
            if call_id not in {r.call_id for r in self.tree.pending_approvals()}:
                raise DecisionError(409, f"no call '{call_id}' waits for a decision")
            try:
                if approve:
                    self.tree.approve(call_id, note="approved in the viewer")
                else:
                    self.tree.reject(call_id, reason.strip() or DENIED_IN_VIEWER)
            except (KeyError, ValueError) as exc:
                raise DecisionError(409, str(exc)) from None
        decision = "approved" if approve else "denied"
        self.tree.events.emit(
            DECISION_EVENT, call_id=call_id, decision=decision, by="viewer", reason=reason
        )
        return {"call_id": call_id, "decision": decision}

    def close(self) -> None:
        """Stop listening to the run; readers of the event stream end."""
        while self._closers:
            self._closers.pop()()
        self.hub.finish()


def _view(tree: Any, use_graphviz: bool) -> TreeView:
    path = Path(tree.path) if getattr(tree, "path", None) else None
    return view_of_tree(tree.root, title=tree.name, path=path, use_graphviz=use_graphviz)


def live_source(tree: Any, *, use_graphviz: bool = True) -> Source:
    """A source following `tree`'s run: subscribe before the run starts."""
    source = Source("live", _view(tree, use_graphviz), tree=tree)

    def forward(event: Any) -> None:
        data = event.to_dict()
        if event.type == "guard.decision" and "arguments" not in data:
            # The page shows a held call with its arguments (the guard's event names the call).
            for record in tree.pending_approvals():
                if record.call_id == data.get("call_id"):
                    data["arguments"] = record.arguments
        source.hub.publish(data)

    source._closers.append(tree.events.subscribe(forward))
    source._closers.append(record_state_writes(tree))
    return source


def static_source(tree: Any, *, use_graphviz: bool = True) -> Source:
    """A source showing the tree only."""
    source = Source("static", _view(tree, use_graphviz), tree=None)
    source.hub.finish()
    return source


def _alias_trace_ids(view: TreeView, events: list[dict[str, Any]]) -> None:
    """Map the trace's node ids onto `view`'s nodes by position, when the names agree."""
    layouts = [e.get("nodes") for e in events if e.get("type") == TREE_NODES_EVENT]
    layout = layouts[-1] if layouts else None
    if not isinstance(layout, list) or len(layout) != len(view.nodes):
        return
    for entry, node in zip(layout, view.nodes, strict=True):
        if isinstance(entry, dict) and entry.get("name") == node["name"]:
            node.setdefault("aliases", []).append(str(entry.get("id")))


def trace_source(path: str | Path, tree: Any = None, *, use_graphviz: bool = True) -> Source:
    """A replay of the trace at `path` (on `tree`'s drawing when given, else the trace's own
    `tree.nodes`). A trace that cannot be read gives a source with the problem and no events."""
    try:
        trace = read_trace_file(path)
    except TraceProblem as exc:
        view = _view(tree, use_graphviz) if tree is not None else TreeView(str(path))
        source = Source("replay", view, problems=[str(exc)])
        source.hub.finish()
        return source
    if tree is not None:
        view = _view(tree, use_graphviz)
        _alias_trace_ids(view, trace.events)
    else:
        layouts = [e.get("nodes") for e in trace.events if e.get("type") == TREE_NODES_EVENT]
        layout = layouts[-1] if layouts and isinstance(layouts[-1], list) else []
        title = Path(path).name
        view = view_of_trace_nodes(layout, title=title, use_graphviz=use_graphviz)
        if not layout:
            trace.warnings.append(
                f"{path}: the trace does not list the tree's nodes (no tree.nodes event): give "
                "the tree file too (jianmu view --trace TRACE FILE) to draw the tree"
            )
        elif all("parent" not in e for e in layout if isinstance(e, dict)):
            trace.warnings.append(
                f"{path}: the trace was written without the tree's shape (an older jianmu): "
                "give the tree file too (jianmu view --trace TRACE FILE) to draw it as a tree"
            )
    source = Source("replay", view, problems=list(trace.warnings))
    for event in trace.events:
        source.hub.publish(event)
    source.hub.finish()
    return source


def history_source(
    store: Any,
    run_id: str,
    tree: Any = None,
    *,
    use_graphviz: bool = True,
    fork: Callable[[int], str] | None = None,
) -> Source:
    """A replay of a durable run's history (StoreError for an unknown run); with `fork`
    (`forking.forker(location, run_id)`), the page offers "fork from here" at checkpoints."""
    events = run_history_events(store, run_id)
    problems = []
    if tree is not None:
        view = _view(tree, use_graphviz)
    else:
        view = TreeView(run_id)
        problems.append(
            f"run {run_id}: its tree file could not be loaded, so only its calls and state are "
            "shown"
        )
    source = Source("replay", view, problems=problems, fork=fork)
    for event in events:
        source.hub.publish(event)
    source.hub.finish()
    return source

"""What a viewer shows: a source gives the tree's view, the events, and takes decisions.

- `live_source(tree)`: a run in this process; its events (and state writes) stream as they come;
  held calls can be approved, denied or responded to (with the token), exactly as at the
  terminal; its questions and external calls wait for the page (`desk`).
- `trace_source(path, tree=None)`: a trace file replayed; faults become `problems` on the page.
- `history_source(store, run_id, tree=None)`: a durable run's journal and checkpoints replayed.
- `static_source(tree)`: just the tree (`jianmu view FILE`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jianmu_bt.runtime import EditRefusedError
from jianmu_bt.viewer.desk_forms import attend, with_fields
from jianmu_bt.viewer.history import run_history_events
from jianmu_bt.viewer.hub import EventHub
from jianmu_bt.viewer.tree_view import TreeView, view_of_trace_nodes, view_of_tree
from jianmu_bt.viz.trace_status import (
    TREE_NODES_EVENT,
    TraceFormatError,
    read_trace_file,
    record_state_writes,
    trace_ids_by_position,
)

#: The reason a denied call's agent reads when the reviewer in the browser gave none.
DENIED_IN_VIEWER = "the reviewer in the viewer said no"
#: Who decided, in the journal and the approval record.
DECIDED_BY = "viewer"
#: The event recorded on the run's bus (so in its trace) for each decision made on the page.
DECISION_EVENT = "approval.decided"
#: Seconds a decision may wait for the run's event loop to take it.
DECISION_TIMEOUT = 10.0


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
    #: How the live run ended (`tree.finished`): its run status (succeeded, failed, paused) and
    #: id; None while it goes on. Decisions are refused once it is set.
    ended: tuple[str, str] | None = None
    #: The event loop the live run ticks on (seen on its `tree.tick` events): decisions made
    #: on the page are applied, and their events emitted, on it.
    run_loop: asyncio.AbstractEventLoop | None = None
    _closers: list[Callable[[], None]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def pending(self) -> list[dict[str, Any]]:
        """The calls waiting for a reviewer now (a live run that has not ended only)."""
        if self.mode != "live" or self.tree is None or self.ended is not None:
            return []
        return [
            {
                "call_id": r.call_id,
                "tool": r.tool,
                "arguments": r.arguments,
                "reason": r.reason,
                "policy": r.policy,
            }
            for r in self.tree.pending_approvals()
        ]

    def decide(
        self,
        call_id: str,
        approve: bool,
        reason: str = "",
        arguments: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Approve or deny a held call of the live run, as the terminal's reviewer would; an
        approval with `arguments` runs the call with those instead (DecisionError 422 when the
        tree refuses the edit: the call stays held)."""
        with self._lock:
            self._check_held(call_id)
            return self._on_run_loop(lambda: self._apply(call_id, approve, reason, arguments))

    def respond(self, call_id: str, reply: str) -> dict[str, Any]:
        """Answer a held call of the live run in its place ("respond instead"): it does not run,
        and the agent reads `reply` as its result."""
        with self._lock:
            self._check_held(call_id)
            return self._on_run_loop(lambda: self._respond(call_id, reply))

    def _check_held(self, call_id: str) -> None:
        """DecisionError (409) unless `call_id` is held by the live run, which goes on."""
        if self.mode != "live" or self.tree is None:
            raise DecisionError(409, "this view is a replay: there is no run to decide for")
        if self.ended is not None:
            status, run_id = self.ended
            later = (
                f": continue with `jianmu resume {run_id} --approve {call_id}` (or --deny)"
                if status == "paused"
                else ""
            )
            raise DecisionError(409, f"the run has ended ({status}){later}")
        if call_id not in {r.call_id for r in self.tree.pending_approvals()}:
            raise DecisionError(409, f"no call '{call_id}' waits for a decision")

    def _respond(self, call_id: str, reply: str) -> dict[str, Any]:
        try:
            self.tree.respond(call_id, reply, by=DECIDED_BY)
        except (KeyError, ValueError) as exc:
            raise DecisionError(409, str(exc)) from None
        self.tree.events.emit(
            DECISION_EVENT, call_id=call_id, decision="responded", by=DECIDED_BY, reason=reply
        )
        return {"call_id": call_id, "decision": "responded"}

    def _apply(
        self, call_id: str, approve: bool, reason: str, arguments: dict[str, Any] | None
    ) -> dict[str, Any]:
        """Decide, then record the decision on the run's bus (on the run's loop when known)."""
        try:
            if arguments is not None:
                note = "approved with edits in the viewer"
                self.tree.approve(call_id, note, arguments=arguments, by=DECIDED_BY)
            elif approve:
                self.tree.approve(call_id, note="approved in the viewer", by=DECIDED_BY)
            else:
                self.tree.reject(call_id, reason.strip() or DENIED_IN_VIEWER, by=DECIDED_BY)
        except EditRefusedError as exc:
            raise DecisionError(422, str(exc)) from None
        except (KeyError, ValueError) as exc:
            raise DecisionError(409, str(exc)) from None
        decision = "approved" if approve else "denied"
        edited = {} if arguments is None else {"edited": True}
        self.tree.events.emit(
            DECISION_EVENT,
            call_id=call_id,
            decision=decision,
            by=DECIDED_BY,
            reason=reason,
            **edited,
        )
        return {"call_id": call_id, "decision": decision, **edited}

    def _on_run_loop(self, act: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """`act()` on the run's own loop (its events are emitted there only, so trace lines never
        interleave), waiting for its answer; here when the run's loop is not known."""
        loop = self.run_loop
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if loop is None or loop is here:
            return act()
        done: concurrent.futures.Future[dict[str, Any]] = concurrent.futures.Future()

        def call() -> None:
            try:
                done.set_result(act())
            except BaseException as exc:  # handed to the waiting request
                done.set_exception(exc)

        try:
            loop.call_soon_threadsafe(call)
        except RuntimeError:  # the loop closed: the run is over
            raise DecisionError(409, "the run has ended") from None
        try:
            return done.result(DECISION_TIMEOUT)
        except concurrent.futures.TimeoutError:
            raise DecisionError(503, "the run did not take the decision in time") from None

    def close(self) -> None:
        """Stop listening to the run; readers of the event stream end."""
        while self._closers:
            self._closers.pop()()
        self.hub.finish()


def _view(tree: Any, use_graphviz: bool) -> TreeView:
    path = Path(tree.path) if getattr(tree, "path", None) else None
    return view_of_tree(tree.root, title=tree.name, path=path, use_graphviz=use_graphviz)


def live_source(tree: Any, *, use_graphviz: bool = True, desk: bool = True) -> Source:
    """A source following `tree`'s run: subscribe before the run starts. With `desk` (the
    default) it attends the tree's questions and external results until it is closed, so
    they wait for the page (`jianmu_bt.viewer.desk`)."""
    source = Source("live", _view(tree, use_graphviz), tree=tree)

    def forward(event: Any) -> None:
        data = event.to_dict()
        if event.type == "tree.tick" and (source.run_loop is None or source.ended is not None):
            source.ended = None  # (a new run of the tree)
            with contextlib.suppress(RuntimeError):  # (no loop in this thread)
                source.run_loop = asyncio.get_running_loop()
        elif event.type == "tree.finished":
            run_id = str(getattr(getattr(tree.runner, "context", None), "run_id", "") or "RUN")
            source.ended = (str(data.get("run_status") or data.get("status")), run_id)
            source.run_loop = None
        if event.type == "guard.decision" and "arguments" not in data:
            # The page shows a held call with its arguments and why it is held (the guard's
            # event names the call and says the reason; its record has the rest).
            for record in tree.pending_approvals():
                if record.call_id == data.get("call_id"):
                    data["arguments"] = record.arguments
                    data.setdefault("reason", record.reason)
                    data.setdefault("policy", record.policy)
        elif event.type == "input.requested":
            with_fields(data)  # the page builds the question's form from its fields
        source.hub.publish(data)

    source._closers.append(tree.events.subscribe(forward))
    source._closers.append(record_state_writes(tree))
    if desk:
        source._closers.append(attend(tree))
    return source


def static_source(tree: Any, *, use_graphviz: bool = True) -> Source:
    """A source showing the tree only."""
    source = Source("static", _view(tree, use_graphviz), tree=None)
    source.hub.finish()
    return source


def _alias_trace_ids(view: TreeView, events: list[dict[str, Any]]) -> None:
    """Map the trace's node ids onto `view`'s nodes by position, when the names agree."""
    names = [node["name"] for node in view.nodes]
    for node, trace_id in zip(view.nodes, trace_ids_by_position(names, events), strict=True):
        if trace_id is not None:
            node.setdefault("aliases", []).append(trace_id)


def trace_source(path: str | Path, tree: Any = None, *, use_graphviz: bool = True) -> Source:
    """A replay of the trace at `path` (on `tree`'s drawing when given, else the trace's own
    `tree.nodes`). A trace that cannot be read gives a source with the problem and no events."""
    try:
        trace = read_trace_file(path)
    except TraceFormatError as exc:
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

"""Loading a tree with an overlay and running it with its trace: what the pytest fixtures use.

```python
tree = open_tree("research.yaml", overlay="research.overlay.yaml")
run = run_tree(tree, inputs={"url": "https://example.org/"})
assert run.succeeded and run.state["summary"]
run.trace.assert_order("Fetch", "Summarise")
tree.close()
```
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from jianmu_bt.runtime.results import RunResult
from jianmu_bt.testing.decisions import (
    CallWaitsError,
    DecisionLike,
    HeldCallDesk,
    RunHeld,
    parse_decisions,
)
from jianmu_bt.testing.outside_values import OutsideValueDesk, ValueWaitsError
from jianmu_bt.testing.overlay import Overlay
from jianmu_bt.testing.overlay_file import load_overlay, overlay_from_data
from jianmu_bt.testing.trace import Call, Trace
from jianmu_bt.viz.trace_status import TREE_NODES_EVENT, tree_nodes_data

if TYPE_CHECKING:
    from jianmu_bt.guard.approval_records import ApprovalRecord
    from jianmu_bt.loader.tree import Tree

DEFAULT_TIMEOUT = 30.0
"""Seconds a test run may take before it is stopped (a failure)."""

OverlayLike = Overlay | str | Path | Mapping[str, Any] | None
"""An Overlay, the path of an overlay file, or an overlay file's data."""


_overlays: WeakKeyDictionary[Tree, Overlay] = WeakKeyDictionary()
"""The overlay `open_tree` applied to each tree it opened (for `run_tree`)."""


class ReplayDivergedError(AssertionError):
    """A run made calls its overlay's recording did not have."""


def as_overlay(overlay: OverlayLike, base_dir: Path | None = None) -> Overlay | None:
    """An Overlay from an Overlay, a file path or the data of a file (None stays None)."""
    if overlay is None or isinstance(overlay, Overlay):
        return overlay
    if isinstance(overlay, (str, Path)):
        path = Path(overlay)
        if base_dir is not None and not path.is_absolute():
            path = base_dir / path
        return load_overlay(path)
    if isinstance(overlay, Mapping):
        return overlay_from_data(dict(overlay), base_dir=base_dir)
    raise TypeError(f"overlay= takes an Overlay, a file path or a dict, got {overlay!r}")


def open_tree(source: str | Path, overlay: OverlayLike = None, **load_options: Any) -> Tree:
    """`load_tree(source, **load_options)` with `overlay` applied (the caller closes it)."""
    from jianmu_bt.loader import load_tree

    tree = load_tree(source, **load_options)
    try:
        applied = as_overlay(overlay)
        if applied is not None:
            applied.apply(tree)
            _overlays[tree] = applied
    except BaseException:
        tree.close()
        raise
    return tree


@dataclass
class TreeRun:
    """A finished run: its result, its trace, the overlay it ran with and the calls its guard
    still holds (a `hold` decision: the run stopped there, its result paused)."""

    result: RunResult
    trace: Trace
    overlay: Overlay | None = None
    held: list[ApprovalRecord] = field(default_factory=list)

    @property
    def status(self) -> str:
        """The root's final status: "SUCCESS" or "FAILURE" ("RUNNING" when stopped at a held
        call)."""
        return str(self.result.status.value)

    @property
    def succeeded(self) -> bool:
        """Whether the run succeeded."""
        return self.status == "SUCCESS"

    @property
    def state(self) -> dict[str, Any]:
        """The run's final state."""
        return dict(self.result.state)

    @property
    def reason(self) -> str:
        """Why the run failed ("" when it succeeded)."""
        return str(self.result.reason or "")

    def calls(self, tool: str | None = None) -> list[Call]:
        """The run's tool calls (see `Trace.calls`)."""
        return self.trace.calls(tool)

    def nodes_ran(self) -> list[str]:
        """The nodes that ran, in order (see `Trace.nodes_ran`)."""
        return self.trace.nodes_ran()


def run_tree(
    tree: Tree,
    inputs: Mapping[str, Any] | None = None,
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
    overlay: Overlay | None = None,
    strict: bool = True,
    decisions: Mapping[str, DecisionLike] | None = None,
    answers: Mapping[str, Any] | None = None,
    results: Mapping[str, Any] | None = None,
) -> TreeRun:
    """Run `tree` once with its events traced. With `strict` (the default), a replay that
    diverged raises ReplayDivergedError naming each call the recording did not have.

    `decisions` decide the calls the guard holds, by call id or tool name: "approve", "deny",
    "hold", or (action, note) (`jianmu_bt.testing.decisions`). A held call with no decision
    raises CallWaitsError at once, naming the call. `answers` answer `ask` steps (by step
    name or question id) and `results` give external tools' calls their results (by tool
    name or call id); a question or call without one raises ValueWaitsError at once
    (`jianmu_bt.testing.outside_values`)."""
    overlay = overlay or _overlays.get(tree)
    desk = HeldCallDesk(tree, parse_decisions(decisions))
    outside = OutsideValueDesk(tree, answers, results)
    trace = Trace()
    unsubscribe = tree.events.subscribe(trace)
    stop_deciding = desk.watch()
    stop_answering = outside.watch()
    # The node layout first, as `jianmu run --trace` writes it (`Trace.nodes_ran` orders by it).
    tree.events.emit(TREE_NODES_EVENT, nodes=tree_nodes_data(tree.root))
    try:
        result = tree.run(inputs, timeout=timeout)
    except RunHeld as held:
        result = _held_result(tree, str(held), desk.stopped_at or {})
    finally:
        stop_answering()
        stop_deciding()
        unsubscribe()
    diverged = overlay.applied(tree).divergences if overlay is not None else []
    if strict and diverged:
        raise ReplayDivergedError(
            "the run made calls its recording did not have:\n  " + "\n  ".join(diverged)
        )
    return TreeRun(result, trace, overlay, held=list(tree.pending_approvals()))


def _held_result(tree: Tree, reason: str, statuses: dict[str, Any]) -> RunResult:
    """The result of a run stopped at a call the test held: paused, as a durable run would."""
    from py_trees.common import Status

    runner = tree.runner
    return RunResult(
        status=Status.RUNNING,
        state=tree.state.get(),
        ticks=runner.tick_count,
        reason=reason,
        run_id=runner.context.run_id,
        node_statuses=statuses,
        paused=True,
    )


__all__ = [
    "DEFAULT_TIMEOUT",
    "CallWaitsError",
    "ReplayDivergedError",
    "TreeRun",
    "ValueWaitsError",
    "as_overlay",
    "open_tree",
    "run_tree",
]

"""Checkpointer: a durable run's checkpoints, written as what changed since the previous one.

A durable run writes a checkpoint with every journal write. Each one whole (every
node's progress, the whole state) would make the store grow with the square of the steps and
each step cost more than the last. So a run writes a whole document now and then (its first
write in a process, then after `every` writes, and after twice as many each time since: the
whole documents grow with the run, so together they stay about as large as the last one) and
in between a delta
(`jianmu_bt.store.deltas`): the guards' snapshots (small), the tick, the progress of the nodes
that moved and the state fields written since the last checkpoint — a list that only grew (an
agent's messages) as the items added. The store hands readers whole
documents.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import py_trees

from jianmu_bt.runtime.progress import tree_progress
from jianmu_bt.runtime.services import RunGuard
from jianmu_bt.runtime.state import StateManager

__all__ = ["FULL_EVERY", "CheckpointedRunner", "Checkpointer"]

FULL_EVERY = 100
"""Writes between the first two whole checkpoints of a process (the gap doubles after each)."""


class CheckpointedRunner(Protocol):
    """What a Checkpointer reads of the tree runner (`TreeRunner` is one)."""

    @property
    def nodes(self) -> Sequence[py_trees.behaviour.Behaviour]: ...
    @property
    def tick_count(self) -> int: ...
    @property
    def state(self) -> StateManager: ...

    @property
    def node_keys(self) -> list[str]: ...
    def moved_nodes(self) -> set[int] | None: ...
    def checkpoint(self, guards: Iterable[RunGuard] | None = None) -> dict[str, Any]: ...


class Checkpointer:
    """Makes the checkpoints of `runner`'s run (with the snapshots of `guards()`): whole ones
    `every` writes apart at first (default FULL_EVERY), twice as far apart after each one."""

    def __init__(
        self,
        runner: CheckpointedRunner,
        guards: Callable[[], Iterable[RunGuard]],
        every: int | None = None,
    ) -> None:
        self.runner = runner
        self.guards = guards
        self.every = max(1, FULL_EVERY if every is None else every)
        self._interval = self.every
        self._since_whole: int | None = None  # None: the next checkpoint is whole
        self._written: set[str] = set()
        self._lists: dict[str, list[Any]] = {}
        self._unsubscribe = runner.state.subscribe(self._written.update)
        # Loops' counters move without their status: every delta looks at them.
        self._loops = [i for i, node in enumerate(runner.nodes) if hasattr(node, "iterations")]

    def close(self) -> None:
        """Stop watching the state."""
        self._unsubscribe()

    def whole(self) -> dict[str, Any]:
        """A whole checkpoint document (state, guards, progress); later deltas build on it."""
        runner = self.runner
        runner.moved_nodes()  # what moved before now is in this document
        self._written.clear()
        document = runner.checkpoint(self.guards())
        self._lists = {k: v for k, v in document["state"].items() if isinstance(v, list)}
        self._since_whole = 0
        return document

    def next(self) -> tuple[dict[str, Any], bool]:
        """The next checkpoint and whether it is a delta."""
        if self._since_whole is None or self._since_whole + 1 >= self._interval:
            if self._since_whole is not None:  # the whole ones grow: write them less often
                self._interval *= 2
            return self.whole(), False
        self._since_whole += 1
        runner = self.runner
        moved = runner.moved_nodes() or set()
        picked = sorted(moved.union(self._loops))
        keys = runner.node_keys
        found = tree_progress([runner.nodes[i] for i in picked], [keys[i] for i in picked], 0)
        nodes = found["nodes"]
        delta: dict[str, Any] = {
            "put": {
                "guards": [guard.snapshot() for guard in self.guards()],
                "progress/tick": runner.tick_count,
            }
        }
        if nodes:
            delta["set"] = {"progress/nodes": nodes}
        reset = [keys[i] for i in picked if keys[i] not in nodes]
        if reset:
            delta["unset"] = {"progress/nodes": reset}
        if self._written:
            self._state_changes(delta)
        return delta, True

    def _state_changes(self, delta: dict[str, Any]) -> None:
        """Put the state fields written since the last checkpoint into `delta`."""
        values = self.runner.state.exact_values(sorted(self._written))
        self._written.clear()
        lists, grown = self._lists, {}
        for key, value in list(values.items()):
            before = lists.get(key)
            if isinstance(value, list):
                lists[key] = value
                # Only the added items when the list kept the very objects it had (`==` would
                # take 1 for True); a reducer appends by making a new list of the same items.
                if (
                    before is not None
                    and len(value) >= len(before)
                    and all(map(operator.is_, value, before))
                ):
                    grown[f"state/{key}"] = value[len(before) :]
                    del values[key]
            elif before is not None:
                del lists[key]
        if values:
            delta.setdefault("set", {})["state"] = values
        if grown:
            delta["extend"] = grown

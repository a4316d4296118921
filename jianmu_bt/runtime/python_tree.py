"""PythonTree: a tree built in Python, with durable runs as a YAML tree has them.

```python
def build() -> py_trees.behaviour.Behaviour:   # called once per PythonTree
    return py_trees.composites.Sequence("Order", memory=True, children=[...])

def order_tree() -> PythonTree:                 # what a resume in another process calls
    return PythonTree("order", build, StateManager(Order), source="shop.flows:order_tree")

result = order_tree().run({"item": "book"}, store="runs.db", run_id="order-1", hold="pause")
order_tree().resume("order-1", store="runs.db", approve=["call_..."])   # any process, later
```

A resume replays the run against its journal, so the process that resumes must build the same
tree: the run records a digest of the tree's shape (each node's key, class and name, and the tool
of each tool step) with `version`, and refuses a tree that differs. `source` ("module:function",
a function returning the PythonTree) is recorded with the run so that `jianmu resume RUN` can
build it too.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import py_trees

from jianmu_bt.runtime.durable_driver import DurableDriver
from jianmu_bt.runtime.events import EventBus
from jianmu_bt.runtime.progress import node_keys
from jianmu_bt.runtime.runner import TreeRunner
from jianmu_bt.runtime.services import RunGuard
from jianmu_bt.runtime.state import StateManager
from jianmu_bt.runtime.tree_desk import TreeDesk

__all__ = ["PYTHON_SOURCE_PREFIX", "PythonTree", "python_tree_from_source", "tree_shape_digest"]

PYTHON_SOURCE_PREFIX = "python:"
"""How a run's `tree_path` names a PythonTree's source: `python:module:function`."""


def tree_shape_digest(root: py_trees.behaviour.Behaviour, name: str, version: str = "") -> str:
    """The SHA-256 of a tree's shape: its name, `version`, and for every node (in order) its
    key, class, name and the tool it calls, if any. A replay needs the same shape."""
    nodes = []
    for key, node in zip(node_keys(root), root.iterate(), strict=True):
        kind = type(node)
        tool = getattr(getattr(node, "tool", None), "name", None)
        nodes.append([key, f"{kind.__module__}.{kind.__qualname__}", node.name, tool])
    text = json.dumps([name, version, nodes], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


class PythonTree(TreeDesk, DurableDriver):
    """A tree built in Python by `build()`, run over `state` (its values at construction are
    every run's initial state), with an optional `guard` (its counters and per-call decisions
    start afresh each run; standing grants carry over) and `services` for the nodes.

    `run`, `resume` and `fork` behave as for a YAML tree (`jianmu_bt.loader.Tree`); see
    docs/durability.md, "Trees built in Python". `version` is part of the tree's digest (raise
    it when the tools' behaviour changes so that old runs are not replayed against it);
    `source` names a function returning this tree ("module:function"), recorded so that
    `jianmu resume` can rebuild it. `runner_options` go to the TreeRunner.
    """

    def __init__(
        self,
        name: str,
        build: Callable[[], py_trees.behaviour.Behaviour],
        state: StateManager,
        *,
        guard: RunGuard | None = None,
        services: Mapping[str, Any] | None = None,
        version: str = "",
        source: str | None = None,
        **runner_options: Any,
    ) -> None:
        if source is not None and source.count(":") != 1:
            raise ValueError(f"source={source!r}: give 'module:function'")
        self.name = name
        self.root = build()
        self.state = state
        self.source = source
        self.path: Path | None = None
        self.digest = tree_shape_digest(self.root, name, version)
        all_services = dict(services or {})
        if guard is not None:
            all_services["guard"] = guard
        self._guards = [guard] if guard is not None else []
        self.runner = TreeRunner(self.root, state, services=all_services, **runner_options)
        self._closed = False
        self._keep_initial()

    @property
    def run_source(self) -> str:
        """`python:module:function` when the tree has a `source`, else ""."""
        return PYTHON_SOURCE_PREFIX + self.source if self.source else ""

    @property
    def events(self) -> EventBus:
        """The run's event bus: `tree.events.subscribe(callback)`."""
        return self.runner.events

    @property
    def guard(self) -> RunGuard | None:
        """The tree's guard, or None."""
        return self._guards[0] if self._guards else None

    @property
    def guards(self) -> list[Any]:
        """The tree's guard in a list (empty without one): checkpointed with durable runs."""
        return list(self._guards)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"tree '{self.name}' is closed")

    def close(self) -> None:
        """Stop the runner's background loop and its watch on the state (the state stays the
        caller's). Idempotent."""
        if not self._closed:
            self._closed = True
            self.runner.close()

    def __enter__(self) -> PythonTree:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<PythonTree {self.name!r}: {len(self.runner.nodes)} nodes>"


def python_tree_from_source(run_source: str) -> PythonTree:
    """The PythonTree a run's `python:module:function` source builds (ValueError saying what
    is wrong when the module or function is missing or does not return a PythonTree)."""
    source = run_source.removeprefix(PYTHON_SOURCE_PREFIX)
    module_name, _, function_name = source.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r} (from {run_source}): {exc}") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ValueError(f"{run_source}: module {module_name!r} has no function {function_name!r}")
    tree = function()
    if not isinstance(tree, PythonTree):
        raise ValueError(f"{run_source} returned {type(tree).__name__}, not a PythonTree")
    return tree

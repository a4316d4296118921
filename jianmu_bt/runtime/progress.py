"""Where a tree stands: stable node keys and the progress record a checkpoint keeps."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any, cast

import py_trees
from py_trees.common import Status

from jianmu_bt.runtime.async_node import AsyncNode


def node_keys(root: py_trees.behaviour.Behaviour) -> list[str]:
    """A stable key per node, in `root.iterate()` order: the loader's node id when it has one,
    else the path of child indices from the root ("0", "0/2", ...)."""
    keys: dict[int, str] = {}
    pending = [(root, "0")]
    while pending:  # pre-order: a parent's key is known before its children's
        node, path = pending.pop()
        info = getattr(node, "jianmu", None)
        own = getattr(info, "id", None)
        keys[id(node)] = own if isinstance(own, str) else path
        pending.extend((child, f"{path}/{i}") for i, child in enumerate(node.children))
    return [keys[id(node)] for node in root.iterate()]


def tree_progress(
    nodes: Sequence[py_trees.behaviour.Behaviour], keys: Sequence[str], tick: int
) -> dict[str, Any]:
    """Each node's status by key (INVALID ones left out) and the counters of loops
    (`iterations`), at tick `tick`."""
    found: dict[str, Any] = {}
    invalid = Status.INVALID
    for node, key in zip(nodes, keys, strict=True):
        status = node.status
        if status is invalid:
            continue
        # `_value_` is what `.value` returns, without the enum property's call (a checkpoint
        # per journal write walks every node).
        entry: dict[str, Any] = {"status": status._value_}
        iterations = getattr(node, "iterations", None)
        if isinstance(iterations, int):
            entry["iterations"] = iterations
        found[key] = entry
    return {"tick": tick, "nodes": found}


def only_work_can_move(nodes: Iterable[py_trees.behaviour.Behaviour]) -> bool:
    """True when a tick now would change no status: every RUNNING node is either an AsyncNode
    (as ours: its status is its work's) whose work is still in flight, or a Sequence or Selector
    with memory (as py_trees': it resumes at its running child). The next tick may then wait
    for the work to end, whatever the last tick changed or wrote."""
    running = Status.RUNNING
    for node in nodes:
        if node.status is not running:
            continue
        kind = _kind(type(node))
        if kind == _RESUMES:
            if not cast(py_trees.composites.Sequence, node).memory:
                return False
        elif kind != _WORKS or not cast(AsyncNode, node).working:
            return False
    return True


_RESUMES, _WORKS, _OTHER = 1, 2, 0


@functools.cache
def _kind(cls: type) -> int:
    """How a RUNNING node of class `cls` behaves at its next tick, by its unchanged methods."""
    for composite in (py_trees.composites.Sequence, py_trees.composites.Selector):
        if issubclass(cls, composite) and cls.tick is composite.tick:
            return _RESUMES
    if (
        issubclass(cls, AsyncNode)
        and cls.update is AsyncNode.update
        and cls.tick is py_trees.behaviour.Behaviour.tick
    ):
        return _WORKS
    return _OTHER

"""Where a tree stands: stable node keys and the progress record a checkpoint keeps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import py_trees
from py_trees.common import Status


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

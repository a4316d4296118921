"""Checkpoint deltas: a checkpoint written as what changed since the run's previous one.

A run that writes a checkpoint at every step would otherwise copy its whole state and progress
each time, so the store would grow with the square of the steps. A delta is a dict of four
optional parts, each mapping a path (keys joined by "/" into nested dicts; "" is the document)
to what changed there:

| part     | value                     | applied as                                  |
|----------|---------------------------|---------------------------------------------|
| `set`    | a dict of keys to values  | those keys of the dict at the path replaced  |
| `unset`  | a list of keys            | those keys removed from the dict at the path |
| `put`    | any value                 | the value at the path replaced               |
| `extend` | a list                    | items appended to the list at the path       |

`apply_delta(document, delta)` returns the new document and shares every part the delta does not
touch with the old one (read results as immutable). The store materialises a delta checkpoint
from the run's last full checkpoint at or before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["DELTA_PARTS", "apply_delta", "check_delta"]

DELTA_PARTS = ("set", "unset", "put", "extend")
"""The parts a delta may have, applied in this order."""


def check_delta(delta: Any) -> None:
    """Raise ValueError unless `delta` is a dict of known parts, each a dict of paths."""
    if not isinstance(delta, Mapping):
        raise ValueError(f"a checkpoint delta is a dict, not {type(delta).__name__}")
    for part, changes in delta.items():
        if part not in DELTA_PARTS:
            raise ValueError(
                f"checkpoint delta: unknown part {part!r}; expected {', '.join(DELTA_PARTS)}"
            )
        if not isinstance(changes, Mapping):
            raise ValueError(f"checkpoint delta: {part!r} maps paths to changes, not {changes!r}")


def _parent(root: dict[str, Any], path: str, copied: set[int]) -> tuple[dict[str, Any], str]:
    """The dict holding the last key of `path` (copied on the way, once per delta) and that key."""
    keys = path.split("/")
    node = root
    for key in keys[:-1]:
        child = node.get(key)
        child = dict(child) if isinstance(child, dict) and id(child) not in copied else child
        if not isinstance(child, dict):
            child = {}
        copied.add(id(child))
        node[key] = child
        node = child
    return node, keys[-1]


def _dict_at(root: dict[str, Any], path: str, copied: set[int]) -> dict[str, Any]:
    """The dict at `path` (made when missing), copied once per delta before it changes."""
    if not path:
        return root
    parent, key = _parent(root, path, copied)
    child = parent.get(key)
    if not isinstance(child, dict):
        child = {}
    elif id(child) not in copied:
        child = dict(child)
    copied.add(id(child))
    parent[key] = child
    return child


def apply_delta(document: Mapping[str, Any], delta: Mapping[str, Any]) -> dict[str, Any]:
    """`document` with `delta` applied (see the module docstring); neither is modified."""
    root = dict(document)
    copied = {id(root)}
    for path, values in delta.get("set", {}).items():
        _dict_at(root, path, copied).update(values)
    for path, keys in delta.get("unset", {}).items():
        target = _dict_at(root, path, copied)
        for key in keys:
            target.pop(key, None)
    for path, value in delta.get("put", {}).items():
        if not path:
            raise ValueError("checkpoint delta: `put` at the document's own path")
        parent, key = _parent(root, path, copied)
        parent[key] = value
    for path, items in delta.get("extend", {}).items():
        parent, key = _parent(root, path, copied)
        current = parent.get(key)
        parent[key] = [*(current if isinstance(current, list) else ()), *items]
    return root

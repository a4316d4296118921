"""A tree's nodes in order, and statuses read from names: shared by the DOT writer, the text
view and the trace statuses."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import py_trees
from py_trees.common import Status

__all__ = ["StatusMap", "as_status", "walk"]

StatusMap = Mapping[str, Status | str]
"""Statuses by `str(node.id)`, as Status values or their names ("SUCCESS", "success")."""


def as_status(value: Status | str | None) -> Status | None:
    """A Status from a Status or its name/value ("SUCCESS", "success"); None when unknown."""
    if value is None or isinstance(value, Status):
        return value
    try:
        return Status(str(value).strip().upper())
    except ValueError:
        return None


def walk(root: py_trees.behaviour.Behaviour) -> Iterator[py_trees.behaviour.Behaviour]:
    """Every node of the tree in pre-order (a parent before its children, children in order)."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children))

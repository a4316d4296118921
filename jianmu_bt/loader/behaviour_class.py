"""The class of a `behaviour` node, by its 'module:Class' path: what building it and checking
its `args` share (kinds_flow.py builds it, behaviour_args.py checks its constructor)."""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from jianmu_bt.loader.node_facts import NodeProblem
from jianmu_bt.tools.references import ReferenceProblem, resolve_reference

if TYPE_CHECKING:
    from py_trees.behaviour import Behaviour


def load_behaviour_class(spec: str, search_paths: Iterable[Path] = ()) -> type[Behaviour]:
    """The py_trees Behaviour class at 'module:Class', its module searched in `search_paths`
    first (the tree file's folder, as for tools), then on `sys.path` (NodeProblem when it is
    not one)."""
    from py_trees.behaviour import Behaviour  # only trees with `behaviour` nodes need py_trees

    try:
        value = resolve_reference(spec, search_paths)
    except ReferenceProblem as exc:
        raise NodeProblem(str(exc), ("class",), code="import-error") from None
    if not (inspect.isclass(value) and issubclass(value, Behaviour)):
        raise NodeProblem(
            f"'{spec}' is not a py_trees Behaviour class (got {type(value).__name__})",
            ("class",),
            code="import-error",
        )
    return value


__all__ = ["load_behaviour_class"]

"""Expansion: the validated file(s) as a flat list of node records, subtrees included.

Each record is one node instance: its kind and config, the file and YAML path it came from (for
messages), its stable id, its display name, its children, and the key map of the subtree
instance it sits in (a `remap` renames the state keys every node of the subtree uses). Including
a file or a named tree pushes it on a stack; meeting it again is an include cycle, reported with
the whole chain instead of recursing forever.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jianmu_bt.loader.diagnostics import Diagnostic, quote_list
from jianmu_bt.loader.model import NodeConfig, SubtreeConfig
from jianmu_bt.loader.positions import Path as DataPath
from jianmu_bt.loader.records import KeyMap, NodeRecord, StateDeclaration, Unit
from jianmu_bt.loader.registry import get_kind, unwrap
from jianmu_bt.loader.units import UnitLoader
from jianmu_bt.tools.references import did_you_mean

MAX_NODES = 100_000
"""Most node instances one tree may expand to (includes multiply)."""
MAX_INCLUDE_DEPTH = 64

Stack = list[tuple[str, str | None, str]]
"""The includes being expanded: (unit key, named tree or None, label for messages)."""


class Expander:
    """Walks the main unit's root, expanding subtrees, into `records` (pre-order)."""

    def __init__(self, main: Unit, loader: UnitLoader) -> None:
        self.main = main
        self.loader = loader
        self.records: dict[str, NodeRecord] = {}
        self.diagnostics: list[Diagnostic] = []
        self.states: list[StateDeclaration] = []
        self.units: list[Unit] = []
        self._names: set[str] = set()
        # The next number to try per default name / repeated id: numbering n unnamed nodes alike
        # stays linear (every smaller number is taken already, and names are never freed).
        self._next_name: dict[str, int] = {}
        self._next_id: dict[str, int] = {}
        self._unit_keymaps: set[tuple[str, tuple[tuple[str, str], ...]]] = set()

    def expand(self) -> str | None:
        """Expand the main tree; the root record's id (None when there is no root)."""
        self._declare(self.main, KeyMap())
        root = self.main.model.root
        if root is None:
            self.diagnostics.append(
                Diagnostic(self.main.file, 1, 1, "error", "the file has no `root` node", "no-root")
            )
            return None
        stack: Stack = [(self.main.key, None, self.main.file)]
        return self._node(root, self.main, ("root",), None, "root", KeyMap(), stack, "")

    # -- state and tools of every unit instance --------------------------------------------

    def _declare(self, unit: Unit, keys: KeyMap) -> None:
        if unit not in self.units:
            self.units.append(unit)
        signature = (unit.key, tuple(sorted((k, keys(k)) for k in unit.model.state)))
        if signature in self._unit_keymaps:
            return
        self._unit_keymaps.add(signature)
        for name, spec in unit.model.state.items():
            self.states.append(StateDeclaration(keys(name), spec, unit, ("state", name)))

    # -- nodes -----------------------------------------------------------------------------

    def _node(
        self,
        wrapper: Any,
        unit: Unit,
        path: DataPath,
        parent: str | None,
        default_id: str,
        keys: KeyMap,
        stack: Stack,
        scope: str,
    ) -> str | None:
        kind, config = unwrap(wrapper)
        if len(self.records) >= MAX_NODES:
            if len(self.records) == MAX_NODES:
                line, col = unit.at(path)
                self.diagnostics.append(
                    Diagnostic(
                        unit.file,
                        line,
                        col,
                        "error",
                        f"the tree expands to more than {MAX_NODES} nodes",
                        "too-large",
                    )
                )
            return None
        node_id = f"{scope}/{config.id}" if (config.id and scope) else (config.id or default_id)
        if node_id in self.records:
            node_id = self._unique_id(node_id)
        record = NodeRecord(node_id, kind, config, unit, path, keys, parent)
        record.name = self._name(kind, config)
        self.records[node_id] = record
        if isinstance(config, SubtreeConfig):
            child = self._subtree(record, stack)
            if child is not None:
                record.children.append(child)
            return node_id
        children = record.children
        for index, (child_path, child) in enumerate(_child_nodes(config, (*path, kind))):
            child_id = self._node(
                child, unit, child_path, node_id, f"{node_id}/{index}", keys, stack, scope
            )
            if child_id is not None:
                children.append(child_id)
        return node_id

    def _unique_id(self, node_id: str) -> str:
        # Duplicates of explicit ids are reported by the checks; keep the graph well-formed.
        n = self._next_id.get(node_id, 2)
        while f"{node_id}#{n}" in self.records:
            n += 1
        self._next_id[node_id] = n + 1
        return f"{node_id}#{n}"

    def _name(self, kind: str, config: NodeConfig) -> str:
        if config.name:
            self._names.add(config.name)
            return config.name
        node_kind = get_kind(kind)
        base = node_kind.display_name(config) if node_kind is not None else kind
        name = base
        if name in self._names:
            n = self._next_name.get(base, 2)
            while f"{base} #{n}" in self._names:
                n += 1
            self._next_name[base] = n + 1
            name = f"{base} #{n}"
        self._names.add(name)
        return name

    def _subtree(self, record: NodeRecord, stack: Stack) -> str | None:
        config = record.config_as(SubtreeConfig)
        unit = record.unit
        target: Unit | None = unit
        if config.file is not None:
            path = Path(config.file)
            if not path.is_absolute():
                path = unit.base_dir / path
            target, reason = self.loader.load_file(path)
            if reason is not None:  # missing, or not a regular file of a sane size
                code = "include-missing" if reason.code == "file-missing" else "include-error"
                self.diagnostics.append(record.diagnostic(reason, code, ("file",)))
        if target is None:
            return None  # the file's own errors are in the loader's diagnostics
        if config.tree is not None:
            wrapper = target.model.trees.get(config.tree)
            if wrapper is None:
                names = list(target.model.trees)
                where = f"in {target.file}" if target is not unit else "in this file's `trees`"
                self.diagnostics.append(
                    record.diagnostic(
                        f"no tree named '{config.tree}' {where}"
                        f"{did_you_mean(config.tree, names)}; named trees: {quote_list(names)}",
                        "unknown-tree",
                        ("tree",),
                    )
                )
                return None
            inner_path: DataPath = ("trees", config.tree)
        else:
            wrapper = target.model.root
            if wrapper is None:
                self.diagnostics.append(
                    record.diagnostic(
                        f"{target.file} has no `root`; name one of its `trees` with `tree:`",
                        "include-missing",
                        ("file",),
                    )
                )
                return None
            inner_path = ("root",)
        label = f"{target.file}#{config.tree}" if config.tree else target.file
        if config.file:
            record.subtree = config.file + (f"#{config.tree}" if config.tree else "")
        else:
            record.subtree = f"trees.{config.tree}"
        entry = (target.key, config.tree, label)
        if any(e[:2] == entry[:2] for e in stack) or len(stack) > MAX_INCLUDE_DEPTH:
            chain = " -> ".join(e[2] for e in [*stack, entry])
            at = ("file",) if config.file else ("tree",)
            self.diagnostics.append(
                record.diagnostic(f"include cycle: {chain}", "include-cycle", at)
            )
            return None
        keys = KeyMap(config.remap, record.keys)
        if target is not unit:
            self._declare(target, keys)
        stack.append(entry)
        try:
            return self._node(
                wrapper, target, inner_path, record.id, f"{record.id}/0", keys, stack, record.id
            )
        finally:
            stack.pop()


def _child_nodes(config: NodeConfig, at: DataPath) -> list[tuple[DataPath, Any]]:
    """A node's children with their paths, given the path `at` of its config: its `children`
    list, or its `child` (any kind, built-in or registered, has children by having such a
    field)."""
    fields = type(config).__pydantic_fields__  # `model_fields`, without its slow accessor
    values = vars(config)  # a pydantic model keeps its fields' values in its __dict__
    if "children" in fields:
        return [((*at, "children", i), child) for i, child in enumerate(values["children"])]
    if "child" in fields:
        return [((*at, "child"), values["child"])]
    return []

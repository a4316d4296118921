"""The data the loader's stages hand on: validated files (`Unit`) and expanded nodes (`NodeRecord`).

A `Unit` is one tree file (or YAML text) after reading and validation: its data, the positions
of its keys and values, and its pydantic model. Expansion turns the units into `NodeRecord`s,
one per node instance (a subtree included twice gives two), each with the `KeyMap` of the
subtree instance it sits in, and into `StateDeclaration`s, one per declared state field. The
later stages (analysis, checks, building) work on these. This module imports none of the stages.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from jianmu_bt.loader.diagnostics import Diagnostic, Severity
from jianmu_bt.loader.model import NodeConfig, StateField, TreeFileBase
from jianmu_bt.loader.node_facts import NodeIO
from jianmu_bt.loader.positions import Path as DataPath, SourceMap
from jianmu_bt.runtime.templates import REFERENCE

ConfigT = TypeVar("ConfigT", bound=NodeConfig)


@dataclass
class Unit:
    """One validated tree file: where it is, its data, positions and model."""

    file: str
    path: Path | None
    base_dir: Path
    source: SourceMap
    data: Any
    model: TreeFileBase
    key: str = ""
    notes: list[Diagnostic] = field(default_factory=list)

    def at(self, path: DataPath, *, key: bool = False) -> tuple[int, int]:
        """Line and column of `path` in this file (of its key with `key=True`)."""
        return self.source.key(path) if key else self.source.value(path)


class KeyMap:
    """The state-key renaming of one subtree instance, composed with its ancestors'."""

    __slots__ = ("mapping", "parent")

    def __init__(
        self, mapping: Mapping[str, str] | None = None, parent: KeyMap | None = None
    ) -> None:
        self.mapping = dict(mapping or {})
        self.parent = parent

    def __call__(self, key: str) -> str:
        key = self.mapping.get(key, key)
        return self.parent(key) if self.parent is not None else key

    @property
    def identity(self) -> bool:
        """True when no key is renamed."""
        return not self.mapping and (self.parent is None or self.parent.identity)

    def template(self, value: Any) -> Any:
        """`value` with the head of every `{key}` reference renamed (through dicts and lists)."""
        if self.identity:
            return value
        if isinstance(value, str):
            return REFERENCE.sub(self._rename_reference, value)
        if isinstance(value, Mapping):
            return {k: self.template(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.template(v) for v in value]
        return value

    def _rename_reference(self, match: re.Match[str]) -> str:
        if not match.group(1):
            return match.group(0)
        head, dot, rest = match.group(1).partition(".")
        return "{" + self(head) + dot + rest + "}"


@dataclass(slots=True)
class NodeRecord:
    """One node instance of the expanded tree."""

    id: str
    kind: str
    config: NodeConfig
    unit: Unit
    path: DataPath
    keys: KeyMap
    parent: str | None
    name: str = ""
    children: list[str] = field(default_factory=list)
    io: NodeIO | None = None
    subtree: str | None = None

    def config_as(self, model: type[ConfigT]) -> ConfigT:
        """The node's config as the model its kind registered (TypeError for another kind's)."""
        if not isinstance(self.config, model):
            raise TypeError(f"a {self.kind} node's config is not a {model.__name__}")
        return self.config

    def config_path(self, *more: str | int) -> DataPath:
        """The YAML path of this node's config, or of a key below it."""
        return (*self.path, self.kind, *more)

    def at(self, sub: DataPath = (), *, key: bool = False) -> tuple[int, int]:
        """Line and column of a key or value below this node's config."""
        return self.unit.at(self.config_path(*sub), key=key)

    def diagnostic(
        self,
        message: str,
        code: str,
        sub: DataPath = (),
        *,
        key: bool = False,
        severity: Severity = "error",
    ) -> Diagnostic:
        """A diagnostic located at `sub` below this node's config (the kind's key when empty)."""
        if not sub:
            line, col = self.unit.at((*self.path, self.kind), key=True)
        else:
            line, col = self.at(sub, key=key)
        return Diagnostic(self.unit.file, line, col, severity, message, code)


@dataclass(slots=True)
class StateDeclaration:
    """A state field declared by some file, under the name it has in the whole tree."""

    name: str
    field: StateField
    unit: Unit
    path: DataPath

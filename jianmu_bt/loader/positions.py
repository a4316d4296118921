"""YAML with positions: parse with `yaml.compose` and remember where every key and value starts.

`parse_yaml(text, file)` returns the document as plain Python data plus a `SourceMap`, which
answers "where is the value at path ('root', 'sequence', 'children', 2, 'tool')?" with a 1-based
line and column. The loader walks pydantic's error locations and its own findings through it, so
every message points into the file. YAML problems the plain loaders accept silently (a key given
twice, a recursive alias, a tag that would build a Python object) are reported here too.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from jianmu_bt.loader.diagnostics import Diagnostic

Path = tuple[str | int, ...]

# libyaml's parser when PyYAML was built with it (much faster on large files), else pure Python.
_Loader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"
_PLAIN_TAGS = frozenset({"tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"})


_NOTHING: Any = object()


def child_value(value: Any, part: str | int) -> Any:
    """`value[part]` for a mapping key or a list index that exists, else a sentinel (MISSING)."""
    if isinstance(value, dict) and part in value:
        return value[part]
    if isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
        return value[part]
    return _NOTHING


MISSING = _NOTHING
"""What `child_value` returns for a path that is not in the data."""


@dataclass(frozen=True, slots=True)
class Position:
    """Where a YAML node starts (1-based), its scalar style and whether it spans one line."""

    line: int
    col: int
    style: str | None = None
    one_line: bool = True


def _position(node: Node) -> Position:
    # libyaml reports a plain scalar's style as "", the Python parser as None
    style = (node.style or None) if isinstance(node, ScalarNode) else None
    return Position(
        node.start_mark.line + 1,
        node.start_mark.column + 1,
        style,
        node.start_mark.line == node.end_mark.line,
    )


@dataclass
class SourceMap:
    """Positions of the keys and values of one parsed document, by path."""

    file: str
    values: dict[Path, Position] = field(default_factory=dict)
    keys: dict[Path, Position] = field(default_factory=dict)

    def value(self, path: Path) -> tuple[int, int]:
        """Line and column of the value at `path`, or of its nearest existing ancestor."""
        pos = self._nearest(path, self.values)
        return pos.line, pos.col

    def key(self, path: Path) -> tuple[int, int]:
        """Line and column of the key naming `path` (its value's position for list items)."""
        found = self.keys.get(path)
        if found is not None:
            return found.line, found.col
        return self.value(path)

    def has(self, path: Path) -> bool:
        """Whether the document has a value at `path`."""
        return path in self.values

    def inside(self, path: Path, offset: int) -> tuple[int, int]:
        """The position of character `offset` inside the one-line scalar at `path`.

        Used to point at the exact place of an error inside an expression or template; falls
        back to the scalar's start for block scalars and multi-line values.
        """
        pos = self.values.get(path)
        if pos is None:
            return self.value(path)
        if not pos.one_line or pos.style not in (None, "'", '"'):
            return pos.line, pos.col
        return pos.line, pos.col + offset + (1 if pos.style else 0)

    def _nearest(self, path: Path, table: dict[Path, Position]) -> Position:
        for size in range(len(path), -1, -1):
            found = table.get(path[:size])
            if found is not None:
                return found
        return Position(1, 1)


class _Builder:
    """Turns composed YAML nodes into Python data, recording positions and problems."""

    def __init__(self, source_map: SourceMap) -> None:
        self.map = source_map
        self.problems: list[Diagnostic] = []
        self.constructor = yaml.constructor.SafeConstructor()
        self._active: set[int] = set()

    def problem(self, pos: Position, message: str, code: str) -> None:
        self.problems.append(Diagnostic(self.map.file, pos.line, pos.col, "error", message, code))

    def build(self, node: Node, path: Path) -> Any:
        pos = _position(node)
        self.map.values.setdefault(path, pos)
        if isinstance(node, ScalarNode):
            if node.tag == _STR_TAG:
                return node.value
            try:
                return self.constructor.construct_object(node, deep=True)
            except yaml.YAMLError as exc:
                problem = getattr(exc, "problem", None) or str(exc)
                self.problem(pos, f"YAML: {problem}", "yaml-syntax")
                return None
        if node.tag not in _PLAIN_TAGS:
            self.problem(
                pos,
                f"YAML: the tag {node.tag} is not allowed; tree files hold plain data",
                "yaml-tag",
            )
            return None
        if id(node) in self._active:
            self.problem(
                pos, "YAML: a recursive alias (an anchor used inside itself)", "yaml-alias"
            )
            return None
        self._active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
            if isinstance(node, MappingNode):
                return self._mapping(node, path)
        finally:
            self._active.discard(id(node))
        self.problem(pos, f"YAML: unsupported node {node.tag}", "yaml-syntax")
        return None

    def _mapping(self, node: MappingNode, path: Path) -> dict[Hashable, Any]:
        result: dict[Hashable, Any] = {}
        seen: dict[Hashable, Position] = {}
        for key_node, value_node in node.value:
            key_pos = _position(key_node)
            if key_node.tag == _MERGE_TAG:
                self._merge(value_node, path, result)
                continue
            if not isinstance(key_node, ScalarNode):
                self.problem(key_pos, "YAML: a mapping key must be a plain value", "yaml-key")
                continue
            key = key_node.value if key_node.tag == _STR_TAG else self.build(key_node, path)
            if not isinstance(key, Hashable) or key is None:
                self.problem(key_pos, f"YAML: {key!r} cannot be a key", "yaml-key")
                continue
            if key in seen:
                first = seen[key]
                self.problem(
                    key_pos,
                    f"duplicate key '{key}' (first given at line {first.line}); "
                    "YAML would silently keep only the last one",
                    "duplicate-key",
                )
            seen[key] = key_pos
            child = (*path, key if isinstance(key, (str, int)) else str(key))
            self.map.keys[child] = key_pos
            self.map.values.pop(child, None)  # a repeated key: the last value's position wins
            result[key] = self.build(value_node, child)
        return result

    def _merge(self, value_node: Node, path: Path, result: dict[Hashable, Any]) -> None:
        # `<<: *defaults` (or a list of them): earlier keys of this mapping win.
        sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
        for source in sources:
            if not isinstance(source, MappingNode):
                self.problem(_position(source), "YAML: '<<' merges mappings only", "yaml-merge")
                continue
            merged = self._mapping(source, path)
            for key, value in merged.items():
                result.setdefault(key, value)


def parse_yaml(text: str, file: str) -> tuple[Any, SourceMap, list[Diagnostic]]:
    """Parse one YAML document: `(data, source_map, problems)`.

    A syntax error gives `data=None` and one diagnostic at the parser's mark; an empty document
    gives `data=None` and no diagnostic (the caller decides what an empty file means).
    """
    source_map = SourceMap(file)
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        problem = exc.problem or "invalid YAML"
        context = ""
        if exc.context and exc.context != problem:
            context = f" ({exc.context}"
            start = exc.context_mark
            if start is not None and mark is not None and start.line != mark.line:
                context += f" that starts at line {start.line + 1}, column {start.column + 1}"
            context += ")"
        at_tab = mark is not None and mark.index < len(text) and text[mark.index] == "\t"
        message = f"YAML syntax: {problem}{context}{_indentation_hint(problem, at_tab)}"
        return None, source_map, [Diagnostic(file, line, col, "error", message, "yaml-syntax")]
    except yaml.YAMLError as exc:
        return None, source_map, [Diagnostic(file, 1, 1, "error", f"YAML: {exc}", "yaml-syntax")]
    if node is None:
        return None, source_map, []
    builder = _Builder(source_map)
    data = builder.build(node, ())
    return data, source_map, builder.problems


def _indentation_hint(problem: str, at_tab: bool) -> str:
    if at_tab:
        return "; this is a tab: YAML indents with spaces only"
    if "mapping values are not allowed" in problem or "expected <block end>" in problem:
        return "; check the indentation of this line against the lines above it"
    return ""

"""YAML with positions: parse with `yaml.compose` and remember where every key and value starts.

`parse_yaml(text, file)` returns the document as plain Python data plus a `SourceMap`, which
answers "where is the value at path ('root', 'sequence', 'children', 2, 'tool')?" with a 1-based
line and column. The loader walks pydantic's error locations and its own findings through it, so
every message points into the file. YAML problems the plain loaders accept silently (a key given
twice, a recursive alias, a tag that would build a Python object) are reported here too.

A document is bounded before it is built (`YamlLimits`, the module's `LIMITS`): an event scan
refuses nesting, values (aliases counted once per use, so "billion laughs" stops at the alias
that crosses the line) and text beyond the limits, and the builder refuses over-long numbers and
keys, each with a located `yaml-limit` diagnostic instead of a hang, a memory blow-up or a
RecursionError.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    CollectionEndEvent,
    CollectionStartEvent,
    Event,
    ScalarEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from jianmu_bt.loader.diagnostics import Diagnostic

Path = tuple[str | int, ...]

# libyaml's parser when PyYAML was built with it (much faster on large files), else pure Python.
_Loader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"
_PLAIN_TAGS = frozenset({"tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"})
_NUMBER_TAGS = frozenset({"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"})
LIMIT_CODE = "yaml-limit"


@dataclass(frozen=True, slots=True)
class YamlLimits:
    """What one YAML document may hold; beyond it the document is refused (`yaml-limit`).

    Loosen them for one process with `positions.LIMITS = dataclasses.replace(LIMITS, ...)`.
    """

    max_depth: int = 200
    """Nesting levels of mappings and sequences (libyaml itself stops at 1000)."""
    max_values: int = 200_000
    """Scalars, mappings and sequences, each use of an alias counting its whole value again."""
    max_chars: int = 16 * 1024 * 1024
    """Characters of all scalars together, aliases counted expanded as for `max_values`."""
    max_string: int = 1_000_000
    """Characters of one scalar."""
    max_number: int = 100
    """Characters of one integer or float literal (a bigger number is a mistake or an attack)."""
    max_key: int = 1024
    """Characters of one mapping key."""


LIMITS = YamlLimits()
"""The limits `parse_yaml` applies when it is given none."""


class _LimitExceeded(Exception):
    """Stops building a document that went past a limit (its diagnostic is already recorded)."""


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

    def __init__(self, source_map: SourceMap, limits: YamlLimits) -> None:
        self.map = source_map
        self.limits = limits
        self.problems: list[Diagnostic] = []
        self.constructor = yaml.constructor.SafeConstructor()
        self._active: set[int] = set()
        self._values = 0

    def problem(self, pos: Position, message: str, code: str) -> None:
        self.problems.append(Diagnostic(self.map.file, pos.line, pos.col, "error", message, code))

    def build(self, node: Node, path: Path) -> Any:
        pos = _position(node)
        self._values += 1
        if self._values > self.limits.max_values or len(path) > self.limits.max_depth:
            # the event scan refuses such documents first; this keeps the builder bounded alone
            self.problem(pos, "YAML: the document is larger or deeper than the limits", LIMIT_CODE)
            raise _LimitExceeded
        self.map.values.setdefault(path, pos)
        if isinstance(node, ScalarNode):
            return self._scalar(node, pos)
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

    def _scalar(self, node: ScalarNode, pos: Position) -> Any:
        if node.tag == _STR_TAG:
            return node.value
        size = len(node.value)
        if node.tag in _NUMBER_TAGS and size > self.limits.max_number:
            self.problem(
                pos,
                f"YAML: a number written with {size} characters (at most "
                f"{self.limits.max_number}); quote it if it is text",
                LIMIT_CODE,
            )
            return None
        try:
            return self.constructor.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or str(exc)
            self.problem(pos, f"YAML: {problem}", "yaml-syntax")
        except (ValueError, OverflowError) as exc:  # e.g. a timestamp with month 13
            self.problem(
                pos, f"YAML: {_short(node.value)} is not a valid value ({exc})", "yaml-syntax"
            )
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
            if len(key_node.value) > self.limits.max_key:
                self.problem(
                    key_pos,
                    f"YAML: a key of {len(key_node.value)} characters "
                    f"(at most {self.limits.max_key})",
                    LIMIT_CODE,
                )
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


def parse_yaml(
    text: str, file: str, limits: YamlLimits | None = None
) -> tuple[Any, SourceMap, list[Diagnostic]]:
    """Parse one YAML document: `(data, source_map, problems)`.

    A syntax error gives `data=None` and one diagnostic at the parser's mark; an empty document
    gives `data=None` and no diagnostic (the caller decides what an empty file means). A
    document beyond `limits` (default: the module's `LIMITS`) gives `data=None` and one
    `yaml-limit` diagnostic where it went past the limit.
    """
    limits = LIMITS if limits is None else limits
    source_map = SourceMap(file)
    too_big = scan_limits(text, file, limits)
    if too_big is not None:
        return None, source_map, [too_big]
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
    except RecursionError:  # the pure-Python composer recurses; the scan bounds the depth
        message = f"YAML: the document nests too deeply (at most {limits.max_depth} levels)"
        return None, source_map, [Diagnostic(file, 1, 1, "error", message, LIMIT_CODE)]
    if node is None:
        return None, source_map, []
    builder = _Builder(source_map, limits)
    try:
        data = builder.build(node, ())
    except _LimitExceeded:
        return None, source_map, builder.problems[-1:]
    return data, source_map, builder.problems


def scan_limits(text: str, file: str, limits: YamlLimits) -> Diagnostic | None:
    """The first place where `text` goes past `limits`, found from the parser's event stream
    before anything is built (nothing but counters is kept), or None.

    Each anchored value's size is remembered when it ends, so each use of its alias adds that
    size again: an alias bomb is refused at the alias that crosses the limit, in time and memory
    proportional to the text. Syntax errors are left to the composer, which reports them.
    """
    values = chars = depth = 0
    open_values: list[tuple[str | None, int, int]] = []  # (anchor, values, chars) at the start
    sizes: dict[str, tuple[int, int]] = {}
    try:
        for event in yaml.parse(text, Loader=_Loader):
            problem = None
            if isinstance(event, ScalarEvent):
                size = len(event.value)
                values, chars = values + 1, chars + size
                if event.anchor:
                    sizes[event.anchor] = (1, size)
                if size > limits.max_string:
                    problem = f"a scalar of {size} characters (at most {limits.max_string})"
            elif isinstance(event, CollectionStartEvent):
                values, depth = values + 1, depth + 1
                open_values.append((event.anchor, values - 1, chars))
                if depth > limits.max_depth:
                    problem = f"the document nests deeper than {limits.max_depth} levels"
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
                anchor, values_before, chars_before = open_values.pop()
                if anchor:
                    sizes[anchor] = (values - values_before, chars - chars_before)
            elif isinstance(event, AliasEvent) and event.anchor in sizes:
                more_values, more_chars = sizes[event.anchor]  # unknown: undefined or recursive
                values, chars = values + more_values, chars + more_chars
            if problem is None:
                problem = _total_problem(event, values, chars, limits)
            if problem is not None:
                mark = event.start_mark
                line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
                return Diagnostic(file, line, col, "error", f"YAML: {problem}", LIMIT_CODE)
    except yaml.YAMLError:
        return None
    return None


def _total_problem(event: Event, values: int, chars: int, limits: YamlLimits) -> str | None:
    what = None
    if values > limits.max_values:
        what = f"more than {limits.max_values} values"
    elif chars > limits.max_chars:
        what = f"more than {limits.max_chars} characters of text"
    if what is None:
        return None
    if isinstance(event, AliasEvent):
        return (
            f"the alias *{event.anchor} expands the document to {what} (each use of an alias "
            "counts its whole value again)"
        )
    return f"the document has {what}"


def _short(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _indentation_hint(problem: str, at_tab: bool) -> str:
    if at_tab:
        return "; this is a tab: YAML indents with spaces only"
    if "mapping values are not allowed" in problem or "expected <block end>" in problem:
        return "; check the indentation of this line against the lines above it"
    return ""

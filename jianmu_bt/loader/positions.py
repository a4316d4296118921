"""YAML with positions: parse with `yaml.compose` and remember where every key and value starts.

`parse_yaml(text, file)` returns the document as plain Python data plus a `SourceMap`, which
answers "where is the value at path ('root', 'sequence', 'children', 2, 'tool')?" with a 1-based
line and column. The loader walks pydantic's error locations and its own findings through it, so
every message points into the file. YAML problems the plain loaders accept silently (a key given
twice, a recursive alias, a tag that would build a Python object) are reported here too.

A document is bounded while it is built (`YamlLimits`, the module's `LIMITS`): composing is
linear in the text (an alias is one shared node), and the builder counts nesting, values and text
as it goes (each use of an alias counting its whole value again, so "billion laughs" stops at the
alias that crosses the line) and refuses over-long numbers and keys, each with a located
`yaml-limit` diagnostic instead of a hang, a memory blow-up or a RecursionError. Only a document
that goes past a limit (or does not compose) is scanned again as events (`yaml_limits`), to say
exactly where and which limit.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, NoReturn

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from jianmu_bt.loader.diagnostics import Diagnostic
from jianmu_bt.loader.yaml_limits import LIMIT_CODE, LOADER, YamlLimits, scan_limits

Path = tuple[str | int, ...]

_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"
_MAP_TAG = "tag:yaml.org,2002:map"
_PLAIN_TAGS = frozenset({"tag:yaml.org,2002:seq", _MAP_TAG})
_NUMBER_TAGS = frozenset({"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"})
SCAN_FIRST_CHARS = 1 << 20
"""Texts longer than this are scanned against the limits before they are composed."""


LIMITS = YamlLimits()
"""The limits `parse_yaml` applies when it is given none."""


class _LimitExceeded(Exception):
    """Stops building a document that went past a limit (its diagnostic is already recorded)."""


MISSING: Any = object()
"""What `child_value` returns for a path that is not in the data."""


def child_value(value: Any, part: str | int) -> Any:
    """`value[part]` for a mapping key or a list index that exists, else a sentinel (MISSING)."""
    if isinstance(value, dict) and part in value:
        return value[part]
    if isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
        return value[part]
    return MISSING


class Position(NamedTuple):
    """Where a YAML node starts (1-based), its scalar style and whether it spans one line."""

    line: int
    col: int
    style: str | None = None
    one_line: bool = True


def _position(node: Node) -> Position:
    """Where a composed node starts, its scalar style and whether it spans one line."""
    start = node.start_mark
    style = node.style if isinstance(node, ScalarNode) else None
    # libyaml reports a plain scalar's style as "", the Python parser as None
    return Position(
        start.line + 1, start.column + 1, style or None, start.line == node.end_mark.line
    )


@dataclass
class SourceMap:
    """Positions of the keys and values of one parsed document, by path.

    It keeps the composed YAML nodes themselves (they carry their marks) and works a position
    out only when one is asked for: most keys and values of a sound file are never looked up.
    """

    file: str
    values: dict[Path, Node] = field(default_factory=dict)
    keys: dict[Path, Node] = field(default_factory=dict)

    def value(self, path: Path) -> tuple[int, int]:
        """Line and column of the value at `path`, or of its nearest existing ancestor."""
        pos = self._nearest(path, self.values)
        return pos.line, pos.col

    def key(self, path: Path) -> tuple[int, int]:
        """Line and column of the key naming `path` (its value's position for list items)."""
        found = self.keys.get(path)
        if found is not None:
            return found.start_mark.line + 1, found.start_mark.column + 1
        return self.value(path)

    def has(self, path: Path) -> bool:
        """Whether the document has a value at `path`."""
        return path in self.values

    def inside(self, path: Path, offset: int) -> tuple[int, int]:
        """The position of character `offset` inside the one-line scalar at `path`.

        Used to point at the exact place of an error inside an expression or template; falls
        back to the scalar's start for block scalars and multi-line values.
        """
        node = self.values.get(path)
        if node is None:
            return self.value(path)
        pos = _position(node)
        if not pos.one_line or pos.style not in (None, "'", '"'):
            return pos.line, pos.col
        return pos.line, pos.col + offset + (1 if pos.style else 0)

    def _nearest(self, path: Path, table: dict[Path, Node]) -> Position:
        for size in range(len(path), -1, -1):
            found = table.get(path[:size])
            if found is not None:
                return _position(found)
        return Position(1, 1)


class _Builder:
    """Turns composed YAML nodes into Python data, recording positions and problems."""

    def __init__(self, source_map: SourceMap, limits: YamlLimits) -> None:
        self.map = source_map
        self.limits = limits
        self.problems: list[Diagnostic] = []
        self.constructor = yaml.constructor.SafeConstructor()
        self._made: dict[tuple[str, str], Any] = {}  # (tag, text) -> value
        self._active: set[int] = set()
        self._values = 0
        self._chars = 0

    def problem(self, node: Node, message: str, code: str) -> None:
        pos = _position(node)
        self.problems.append(Diagnostic(self.map.file, pos.line, pos.col, "error", message, code))

    def count(self, node: Node, depth: int) -> None:
        """Count `node` as `scan_limits` counts its event (`depth`: collections around it)."""
        self._values += 1
        limits = self.limits
        if isinstance(node, ScalarNode):
            size = len(node.value)
            self._chars += size
            over = size > limits.max_string or self._chars > limits.max_chars
        else:
            over = depth >= limits.max_depth
        if over or self._values > limits.max_values:
            self.over(node)

    def over(self, node: Node) -> NoReturn:
        """Stop: the document went past a limit at `node`."""
        # parse_yaml then asks scan_limits where and which limit, for the message
        self.problem(node, "YAML: the document is larger or deeper than the limits", LIMIT_CODE)
        raise _LimitExceeded

    def build(self, node: Node, path: Path) -> Any:
        self.count(node, len(path))
        self.map.values.setdefault(path, node)
        if isinstance(node, ScalarNode):
            return self._scalar(node)
        if node.tag not in _PLAIN_TAGS:
            self.problem(
                node,
                f"YAML: the tag {node.tag} is not allowed; tree files hold plain data",
                "yaml-tag",
            )
            return None
        if id(node) in self._active:
            self.problem(
                node, "YAML: a recursive alias (an anchor used inside itself)", "yaml-alias"
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
        self.problem(node, f"YAML: unsupported node {node.tag}", "yaml-syntax")
        return None

    def _scalar(self, node: ScalarNode) -> Any:
        if node.tag == _STR_TAG:
            return node.value
        size = len(node.value)
        if node.tag in _NUMBER_TAGS and size > self.limits.max_number:
            self.problem(
                node,
                f"YAML: a number written with {size} characters (at most "
                f"{self.limits.max_number}); quote it if it is text",
                LIMIT_CODE,
            )
            return None
        made = (node.tag, node.value)  # immutable values (numbers, bools, dates): made once each
        try:
            value = self._made.get(made, MISSING)
            if value is MISSING:
                value = self._made[made] = self.constructor.construct_object(node, deep=True)
            return value
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or str(exc)
            self.problem(node, f"YAML: {problem}", "yaml-syntax")
        except (ValueError, OverflowError) as exc:  # e.g. a timestamp with month 13
            self.problem(
                node, f"YAML: {_short(node.value)} is not a valid value ({exc})", "yaml-syntax"
            )
        return None

    def _mapping(self, node: MappingNode, path: Path) -> dict[Hashable, Any]:
        result: dict[Hashable, Any] = {}
        seen: dict[Hashable, Node] = {}
        keys, values = self.map.keys, self.map.values
        depth = len(path) + 1
        limits = self.limits
        max_key, max_string = limits.max_key, limits.max_string
        max_chars, max_values = limits.max_chars, limits.max_values
        max_depth, active = limits.max_depth, self._active
        merged = False  # a merged key's position gives way to this mapping's own
        for key_node, value_node in node.value:
            tag = key_node.tag
            if tag == _STR_TAG and type(key_node) is ScalarNode:  # the common case, fast
                # `count` of a text key (and below of a text value), inlined: the hot path
                key: Any = key_node.value
                size = len(key)
                self._values += 1
                self._chars += size
                if size > max_string or self._chars > max_chars or self._values > max_values:
                    self.over(key_node)
                if size <= max_key and key not in seen:
                    seen[key] = key_node
                    child = (*path, key)
                    keys[child] = key_node
                    if merged:
                        values.pop(child, None)
                    if type(value_node) is ScalarNode and value_node.tag == _STR_TAG:
                        values[child] = value_node  # a text value: `build` without the calls
                        text = value_node.value
                        size = len(text)
                        self._values += 1
                        self._chars += size
                        if (
                            size > max_string
                            or self._chars > max_chars
                            or self._values > max_values
                        ):
                            self.over(value_node)
                        result[key] = text
                    elif (
                        type(value_node) is MappingNode
                        and value_node.tag == _MAP_TAG
                        and id(value_node) not in active
                    ):  # a plain mapping value: `build` without its calls
                        self._values += 1
                        if depth >= max_depth or self._values > max_values:
                            self.over(value_node)
                        values.setdefault(child, value_node)
                        active.add(id(value_node))
                        try:
                            result[key] = self._mapping(value_node, child)
                        finally:
                            active.discard(id(value_node))
                    else:
                        result[key] = self.build(value_node, child)
                    continue
            elif tag == _MERGE_TAG:
                self.count(key_node, depth)
                self._merge(value_node, path, result)
                merged = True
                continue
            self._key(key_node, value_node, path, result, seen)
        return result

    def _key(
        self,
        key_node: Node,
        value_node: Node,
        path: Path,
        result: dict[Hashable, Any],
        seen: dict[Hashable, Node],
    ) -> None:
        """One mapping entry off the fast path: a key to refuse, repeated, or not a string."""
        if not isinstance(key_node, ScalarNode):
            self.problem(key_node, "YAML: a mapping key must be a plain value", "yaml-key")
            return
        if len(key_node.value) > self.limits.max_key:
            self.problem(
                key_node,
                f"YAML: a key of {len(key_node.value)} characters (at most {self.limits.max_key})",
                LIMIT_CODE,
            )
            return
        key = key_node.value if key_node.tag == _STR_TAG else self.build(key_node, path)
        if not isinstance(key, Hashable) or key is None:
            self.problem(key_node, f"YAML: {key!r} cannot be a key", "yaml-key")
            return
        if key in seen:
            first = _position(seen[key])
            self.problem(
                key_node,
                f"duplicate key '{key}' (first given at line {first.line}); "
                "YAML would silently keep only the last one",
                "duplicate-key",
            )
        seen[key] = key_node
        child = (*path, key if isinstance(key, (str, int)) else str(key))
        self.map.keys[child] = key_node
        self.map.values.pop(child, None)  # a repeated key: the last value's position wins
        result[key] = self.build(value_node, child)

    def _merge(self, value_node: Node, path: Path, result: dict[Hashable, Any]) -> None:
        # `<<: *defaults` (or a list of them): earlier keys of this mapping win.
        many = isinstance(value_node, SequenceNode)
        if many:
            self.count(value_node, len(path) + 1)
        for source in value_node.value if many else [value_node]:
            self.count(source, len(path) + 1 + many)
            if not isinstance(source, MappingNode):
                self.problem(source, "YAML: '<<' merges mappings only", "yaml-merge")
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
    # A long text is scanned before it is composed (composing it costs memory in proportion);
    # a shorter one costs no more to compose than a sound file of its size, and is scanned
    # only when it does not compose or the builder finds it past a limit.
    scanned = len(text) > SCAN_FIRST_CHARS
    too_big = scan_limits(text, file, limits) if scanned else None
    if too_big is not None:
        return None, source_map, [too_big]
    try:
        node = yaml.compose(text, Loader=LOADER)
    except (yaml.YAMLError, RecursionError) as exc:
        too_big = None if scanned else scan_limits(text, file, limits)
        return None, source_map, [too_big or _compose_problem(exc, text, file, limits)]
    if node is None:
        return None, source_map, []
    builder = _Builder(source_map, limits)
    try:
        data = builder.build(node, ())
    except _LimitExceeded:
        too_big = None if scanned else scan_limits(text, file, limits)
        return None, source_map, [too_big or builder.problems[-1]]
    return data, source_map, builder.problems


def _compose_problem(
    exc: yaml.YAMLError | RecursionError, text: str, file: str, limits: YamlLimits
) -> Diagnostic:
    """The diagnostic of a document that does not compose."""
    if isinstance(exc, RecursionError):  # the pure-Python composer recurses
        message = f"YAML: the document nests too deeply (at most {limits.max_depth} levels)"
        return Diagnostic(file, 1, 1, "error", message, LIMIT_CODE)
    if not isinstance(exc, yaml.MarkedYAMLError):
        return Diagnostic(file, 1, 1, "error", f"YAML: {exc}", "yaml-syntax")
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
    return Diagnostic(file, line, col, "error", message, "yaml-syntax")


def _short(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _indentation_hint(problem: str, at_tab: bool) -> str:
    if at_tab:
        return "; this is a tab: YAML indents with spaces only"
    if "mapping values are not allowed" in problem or "expected <block end>" in problem:
        return "; check the indentation of this line against the lines above it"
    return ""

"""YAML limits: what one document may hold, and the event scan that says where one goes past them.

`positions.parse_yaml` counts as it builds and asks `scan_limits` only for a document that went
past a limit or did not compose (or first, for a long text): the scan reads the parser's event
stream, keeping nothing but counters, and names the first place and the limit crossed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from yaml.events import AliasEvent, CollectionEndEvent, CollectionStartEvent, Event, ScalarEvent
from yaml.nodes import MappingNode, ScalarNode

from jianmu_bt.loader.diagnostics import Diagnostic

_BASE_LOADER: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# The words a plain scalar starting with a letter can be other than text, lower-cased: YAML 1.1
# booleans and null as PyYAML's safe loader reads them (it takes only these spellings, in lower,
# Title or UPPER case; any other word is a string).
_WORDS = frozenset({"yes", "no", "true", "false", "on", "off", "null"})


class _Loader(_BASE_LOADER):
    """The safe loader, resolving most plain scalars without PyYAML's generic path.

    Resolving a plain scalar (is it a number, a bool, null, a date?) runs in Python for every key
    and value, even under libyaml. PyYAML keys its patterns by the text's first character; a
    text whose first character starts none of them, or a word that is none of `_WORDS` (most
    keys, names and expressions of a tree file), is a string, and this answers so at once. With
    no path resolvers registered (the safe loader has none), a mapping or a sequence without a
    tag is a map or a seq, and the composer's per-node resolver hooks are no-ops.
    """

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        patterns = self.yaml_implicit_resolvers
        # What `resolve` answers without PyYAML's generic path (fixed for one document).
        self._firsts = None if None in patterns else frozenset(patterns)
        self._plain = not self.yaml_path_resolvers
        if self._plain:
            # The composer calls these two around every node, for path resolvers only: C
            # no-ops instead of PyYAML's Python methods save two Python calls a node.
            nothing: dict[Any, None] = {}
            self.descend_resolver = nothing.get  # (parent, index) -> None
            self.ascend_resolver = nothing.clear  # () -> None (clears an empty dict)

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is ScalarNode:
            firsts = self._firsts
            if implicit[0] and value and firsts is not None:
                first = value[0]
                if first not in firsts or (
                    first.isalpha() and (len(value) > 5 or value.lower() not in _WORDS)
                ):
                    return self.DEFAULT_SCALAR_TAG
        elif self._plain:
            return self.DEFAULT_MAPPING_TAG if kind is MappingNode else self.DEFAULT_SEQUENCE_TAG
        return super().resolve(kind, value, implicit)


# libyaml's parser when PyYAML was built with it (much faster on large files), else pure Python.
LOADER: type[Any] = _Loader
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
        for event in yaml.parse(text, Loader=LOADER):
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

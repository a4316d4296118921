"""The batch's inputs: one JSON object per line of a JSONL file, each a run's initial state.

Every line is checked against the tree's state schema before anything runs: it must be a JSON
object whose keys are state fields, whose values fit their types, and which gives every field
the tree marks `input: true` that has no default. A bad line is reported with its line number;
the other lines still run. Blank lines are skipped (they are not inputs).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jianmu_bt.runtime.state_schema import compile_schema


@dataclass(frozen=True, slots=True)
class InputLine:
    """One input of the batch: its 1-based line number, and its values or why it is refused."""

    line: int
    values: dict[str, Any] | None
    error: str = ""


class InputChecker:
    """Checks one line's values against a loaded tree's state (its schema and `input:` fields)."""

    def __init__(self, tree: Any) -> None:
        self.plan = compile_schema(tree.state.schema)
        self.fields = tuple(tree.state.fields)
        self.required = [
            name
            for name, facts in tree.state_info.fields.items()
            if facts.input and not facts.has_default
        ]

    def check(self, values: Any) -> str:
        """Why `values` cannot start a run ("" when they can)."""
        if not isinstance(values, dict):
            return f"expected a JSON object of state fields, got {_json_type(values)}"
        for key in values:
            if key not in self.fields:
                return (
                    f"the tree's state has no field '{key}'; its fields are: "
                    f"{', '.join(self.fields)}"
                )
        missing = [name for name in self.required if name not in values]
        if missing:
            return f"missing input(s): {', '.join(missing)}"
        try:
            self.plan.starting_values(values)
        except ValueError as exc:  # StateValidationError, UnknownStateKeyError
            return str(exc)
        return ""

    def same_inputs(self, values: dict[str, Any], recorded: dict[str, Any]) -> bool:
        """Whether a run recorded with starting state `recorded` began from `values` (each field
        of the starting state `values` give, defaults included, is the recorded one)."""
        starting = self.plan.starting_values(values)
        return all(_plain(v) == _plain(recorded.get(k)) for k, v in starting.items())


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str, sort_keys=True))


#: Longest input line read, in bytes: a longer one is refused (and not held in memory).
MAX_LINE_BYTES = 8 * 1024 * 1024
#: Deepest nesting of arrays and objects an input line may have.
MAX_DEPTH = 64
_READ = 1024 * 1024


def _lines(path: Path) -> Iterator[tuple[int, bytes | None]]:
    """Each line of `path` with its 1-based number: its bytes, or None for a line longer than
    MAX_LINE_BYTES (read past in pieces, never held whole)."""
    with path.open("rb") as stream:
        number = 0
        while True:
            raw = stream.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            number += 1
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                while (rest := stream.readline(_READ)) and not rest.endswith(b"\n"):
                    pass
                yield number, None
                continue
            yield number, raw


def parse_line(raw: bytes) -> tuple[Any, str]:
    """The JSON value of one input line, or why it is refused: not UTF-8 (where the first bad
    byte is: never decoded with replacement characters, which would change its values), not
    JSON, NaN or Infinity (not JSON), a key given twice, or nested deeper than MAX_DEPTH."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text (byte {exc.start + 1}: {raw[exc.start : exc.start + 1]!r})"
    try:
        value = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique)
    except json.JSONDecodeError as exc:
        return None, f"not JSON: {exc.msg} (column {exc.colno})"
    except ValueError as exc:  # a constant or a duplicate key, refused by the hooks
        return None, str(exc)
    except RecursionError:
        return None, f"nested more than {MAX_DEPTH} levels deep"
    if _depth(value) > MAX_DEPTH:
        return None, f"nested more than {MAX_DEPTH} levels deep"
    return value, ""


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number; write a number or null")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"the key {key!r} is given twice in one object")
        found[key] = value
    return found


def _depth(value: Any) -> int:
    """How deeply arrays and objects nest in `value` (0 for a scalar), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            if level <= MAX_DEPTH:
                stack.extend((child, level + 1) for child in children)
    return deepest


def read_inputs(path: Path, checker: InputChecker) -> Iterator[InputLine]:
    """Each non-blank line of `path` as an InputLine (values, or the reason it is refused): a
    line that cannot be read as a JSON value (`parse_line`), or longer than MAX_LINE_BYTES, is
    that line's error; the other lines still run."""
    for number, raw in _lines(path):
        if raw is None:
            yield InputLine(number, None, f"longer than {MAX_LINE_BYTES} bytes")
            continue
        if not raw.strip():
            continue
        values, problem = parse_line(raw)
        if not problem:
            problem = checker.check(values)
        yield InputLine(number, None if problem else values, problem)


def count_inputs(path: Path) -> int:
    """How many lines of `path` are inputs (not blank; a line that cannot be read counts)."""
    return sum(1 for _, raw in _lines(path) if raw is None or raw.strip())


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")

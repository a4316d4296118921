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


def read_inputs(path: Path, checker: InputChecker) -> Iterator[InputLine]:
    """Each non-blank line of `path` as an InputLine (values, or the reason it is refused).

    A line that is not UTF-8 text is refused with where its first bad byte is (never decoded
    with replacement characters, which would change its values silently)."""
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                where = f"byte {exc.start + 1}: {raw[exc.start : exc.start + 1]!r}"
                yield InputLine(number, None, f"not UTF-8 text ({where})")
                continue
            if not text.strip():
                continue
            try:
                values = json.loads(text)
            except json.JSONDecodeError as exc:
                yield InputLine(number, None, f"not JSON: {exc.msg} (column {exc.colno})")
                continue
            problem = checker.check(values)
            yield InputLine(number, None if problem else values, problem)


def count_inputs(path: Path) -> int:
    """How many lines of `path` are inputs (not blank; a line that is not UTF-8 counts)."""
    with path.open("rb") as lines:
        return sum(1 for raw in lines if raw.strip())


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")

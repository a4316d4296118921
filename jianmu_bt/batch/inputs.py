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


def read_inputs(path: Path, checker: InputChecker) -> Iterator[InputLine]:
    """Each non-blank line of `path` as an InputLine (values, or the reason it is refused)."""
    with path.open("r", encoding="utf-8", errors="replace") as lines:
        for number, text in enumerate(lines, start=1):
            if not text.strip():
                continue
            try:
                values = json.loads(text)
            except json.JSONDecodeError as exc:
                yield InputLine(number, None, f"not JSON: {exc.msg} (column {exc.colno})")
                continue
            problem = checker.check(values)
            yield InputLine(number, None if problem else values, problem)


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")

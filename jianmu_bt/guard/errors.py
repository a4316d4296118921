"""Errors of the guard package, with messages that name the key and the value that were wrong."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # only read here: pydantic is imported by whoever validates
    from pydantic import ValidationError


def describe_validation_error(error: ValidationError) -> list[dict[str, Any]]:
    """pydantic's errors, one dict per problem: `{"loc": "budgets.http", "msg", "input"}`."""
    problems = []
    for item in error.errors(include_url=False):
        loc = ".".join(str(part) for part in item["loc"])
        msg = item["msg"].removeprefix("Value error, ")
        problems.append({"loc": loc, "msg": msg, "input": item.get("input"), "type": item["type"]})
    return problems


def _line(problem: dict[str, Any]) -> str:
    where = problem["loc"] or "(top level)"
    return f"{where}: {problem['msg']}"


class GuardConfigError(ValueError):
    """A guard configuration that cannot be used; `problems` lists each key and what is wrong.

    The message starts with "guard config:" and names every offending key, e.g.
    `guard config: budgets.http: must be a whole number >= 0, got -1`.
    """

    def __init__(self, problems: list[dict[str, Any]]) -> None:
        self.problems = problems
        lines = [_line(p) for p in problems]
        text = lines[0] if len(lines) == 1 else "\n  " + "\n  ".join(lines)
        super().__init__(f"guard config: {text}")

    @classmethod
    def from_validation_error(cls, error: ValidationError) -> GuardConfigError:
        """One GuardConfigError carrying every problem pydantic found."""
        return cls(describe_validation_error(error))


class GuardSnapshotError(ValueError):
    """A guard snapshot (context or approvals) that cannot be restored, naming the bad entry."""

    @classmethod
    def from_validation_error(cls, what: str, error: ValidationError) -> GuardSnapshotError:
        """An error naming `what` was being restored and every problem in it."""
        lines = [_line(p) for p in describe_validation_error(error)]
        return cls(f"{what} snapshot: " + "; ".join(lines))

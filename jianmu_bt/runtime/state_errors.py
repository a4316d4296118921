"""The errors of a run's state, and the short texts their messages are made of."""

from __future__ import annotations

import reprlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

_short = reprlib.Repr()
_short.maxstring = 60
_short.maxother = 60
_short.maxlist = 4
_short.maxdict = 4
_short.maxlevel = 3


def short_repr(value: Any) -> str:
    """A repr of `value` cut to a readable length, for error messages."""
    return _short.repr(value)


class StateValidationError(ValueError):
    """A write to a run's state was refused; the state is unchanged.

    Attributes: `field` (the field written), `value` (the value given), `expected` (a readable
    name of the field's type) and `errors` (pydantic's error dicts, empty when no pydantic
    validation ran).
    """

    def __init__(
        self,
        message: str,
        *,
        field: str,
        value: Any,
        expected: str | None = None,
        errors: Iterable[Mapping[str, Any]] = (),
    ) -> None:
        """Record the message and what was refused."""
        super().__init__(message)
        self.message = message
        self.field = field
        self.value = value
        self.expected = expected
        self.errors = list(errors)

    def __str__(self) -> str:
        # KeyError (a base of UnknownStateKeyError) would otherwise quote the message
        return self.message


class UnknownStateKeyError(StateValidationError, KeyError):
    """A key that is not a field of the state schema; lists the known fields.

    It is also a `KeyError`, so `get()` of an unknown key raises what a mapping would.
    """

    def __init__(self, key: Any, known: Iterable[str], value: Any = None) -> None:
        """Name the unknown `key` and the fields the schema does have."""
        self.known = tuple(known)
        message = f"unknown state field {key!r}; known fields: {', '.join(self.known) or '(none)'}"
        super().__init__(message, field=str(key), value=value)


class StateClosedError(RuntimeError):
    """The state's blackboard keys are gone: the manager was closed or the blackboard cleared."""


def describe_errors(
    errors: Sequence[Mapping[str, Any]], *, skip_loc: int = 0, limit: int = 3
) -> str:
    """pydantic error dicts as one line: `at [0]['role']: Field required; ...`."""
    parts = []
    for error in errors[:limit]:
        loc = "".join(f"[{part!r}]" for part in error.get("loc", ())[skip_loc:])
        parts.append(f"at {loc}: {error['msg']}" if loc else str(error["msg"]))
    if len(errors) > limit:
        parts.append(f"and {len(errors) - limit} more")
    return "; ".join(parts)

"""Refusals of the run's typed encoding: which value could not be recorded, where, and why.

The encoder (`jianmu_bt.store.codec`) raises `Refused` deep inside a value; each level it
unwinds through adds its step of the path, and `refusal` turns it into the one-line
UnrecordableValueError a person or an LLM can act on: `output['items'][2] is of type Foo, …`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RECORDABLE", "Refused", "UnrecordableValueError", "refusal", "type_name"]

RECORDABLE = (
    "JSON values (str, int, float, bool, None, lists, dicts), Decimal, date, time, datetime, "
    "timedelta, UUID, set, frozenset, bytes, bytearray, tuple, Enum members, dataclasses and "
    "pydantic models (of classes importable by name)"
)
"""What a run can record, for messages."""


class UnrecordableValueError(TypeError):
    """A value a run cannot record exactly; the message names where it is and its type."""

    def __init__(self, message: str, *, where: str = "", type_name: str = "") -> None:
        super().__init__(message)
        self.where = where
        """Where the value is (`output['items'][2]`)."""
        self.type_name = type_name
        """The value's type, `module.Qualname`."""


class Refused(Exception):
    """Raised inside the walk; `path` collects the location as it unwinds (innermost first)."""

    def __init__(self, kind: type, reason: str) -> None:
        super().__init__(reason)
        self.kind, self.reason = kind, reason
        self.path: list[Any] = []


def _path_text(where: str | None, parts: list[Any]) -> str:
    """`output['items'][2]` from a root and the path parts (outermost first)."""
    pieces = []
    for part in parts:
        if isinstance(part, str):
            pieces.append(part)  # an attribute ('.name') or a marker ('{member}', '{key}')
        else:
            pieces.append(f"[{part[0]!r}]")  # a key or an index, in a 1-tuple
    if where is None:  # a document: its first key names the value (`state['plan']`)
        if parts and not isinstance(parts[0], str) and isinstance(parts[0][0], str):
            return parts[0][0] + "".join(pieces[1:])
        where = "value"
    return where + "".join(pieces)


def type_name(kind: type) -> str:
    """A type's name for messages: `int`, `mymodule.Order`."""
    module = getattr(kind, "__module__", "")
    return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"


def refusal(exc: Refused, where: str | None) -> UnrecordableValueError:
    """The error for a value the walk refused, located from `where` (None: a document)."""
    located = _path_text(where, exc.path[::-1])
    kind = exc.kind
    reason = f": {exc.reason}" if exc.reason else " exactly"
    return UnrecordableValueError(
        f"{located} is of type {type_name(kind)}, which a run cannot record{reason}; a run "
        f"records {RECORDABLE}",
        where=located,
        type_name=type_name(kind),
    )

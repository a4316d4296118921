"""Reducers: how a write to a state field combines with the value already there.

A reducer is a function `(old, new) -> result`. Each field of a run's state has one; the default
replaces the old value. A field chooses another reducer in its annotation
(`Annotated[list[dict], Reducer("append")]`) or through `StateManager(..., reducers={...})`.

| name      | old      | new                 | result                                     |
|-----------|----------|---------------------|--------------------------------------------|
| `replace` | anything | anything            | `new`                                      |
| `append`  | list     | list / single item  | a new list: old + new items / old + [item] |
| `add`     | number   | number              | `old + new`                                |
| `add`     | dict     | dict of numbers     | a new dict, values added per key           |
| `merge`   | dict     | dict                | a new dict: `{**old, **new}`               |

Reducers never mutate `old`: a refused write (the result fails validation) must leave the state
exactly as it was, and readers may hold references to the old value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from numbers import Number
from typing import Any, TypeAlias

ReducerFunction: TypeAlias = Callable[[Any, Any], Any]


def replace_reducer(old: Any, new: Any) -> Any:
    """The default: the new value replaces the old one."""
    return new


def append_reducer(old: Any, new: Any) -> list[Any]:
    """Extend a list with a list, or append a single item (a `None` old value counts as `[]`).

    Only a `list` extends; any other value, tuples included, is one item. To append one item
    that is itself a list, wrap it: `[[1, 2]]`.
    """
    if old is None:
        old = []
    elif not isinstance(old, list):
        raise TypeError(f"'append' needs a list to append to, the field holds {type(old).__name__}")
    if isinstance(new, list):
        return [*old, *new]
    return [*old, new]


def add_reducer(old: Any, new: Any) -> Any:
    """Add numbers, or dicts of numbers per key (nested dicts add recursively).

    `None` as the old value counts as nothing, so the first write sets the value. Used for
    counters such as `tool_effects` (`{"http": 1}` added to `{"http": 2, "file_write": 1}`).
    """
    if old is None:
        return dict(new) if isinstance(new, Mapping) else new
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        result = dict(old)
        for key, value in new.items():
            result[key] = add_reducer(result.get(key), value)
        return result
    if _is_number(old) and _is_number(new):
        return old + new
    raise TypeError(
        f"'add' needs two numbers or two dicts of numbers, got {type(old).__name__} "
        f"and {type(new).__name__}"
    )


def merge_reducer(old: Any, new: Any) -> dict[Any, Any]:
    """Shallow dict update: keys of `new` win (a `None` old value counts as `{}`)."""
    if not isinstance(new, Mapping):
        raise TypeError(f"'merge' needs a dict to merge in, got {type(new).__name__}")
    if old is None:
        return dict(new)
    if not isinstance(old, Mapping):
        raise TypeError(f"'merge' needs a dict to merge into, the field holds {type(old).__name__}")
    return {**old, **new}


def _is_number(value: Any) -> bool:
    # bool is an int subclass; adding flags is almost certainly a mistake
    return isinstance(value, Number) and not isinstance(value, bool)


BUILTIN_REDUCERS: Mapping[str, ReducerFunction] = {
    "replace": replace_reducer,
    "append": append_reducer,
    "add": add_reducer,
    "merge": merge_reducer,
}


class Reducer:
    """A named reducer: field metadata (`Annotated[T, Reducer("append")]`) and the resolved form.

    `Reducer("append")` picks a built-in by name (an unknown name is a `ValueError` at once,
    listing the known ones); `Reducer(func)` wraps any callable `(old, new) -> new`. Calling a
    Reducer applies it.
    """

    __slots__ = ("function", "name")

    def __init__(self, spec: str | ReducerFunction | Reducer) -> None:
        """Resolve `spec`: a built-in name, a callable, or another Reducer (copied)."""
        if isinstance(spec, Reducer):
            self.name: str = spec.name
            self.function: ReducerFunction = spec.function
        elif isinstance(spec, str):
            function = BUILTIN_REDUCERS.get(spec)
            if function is None:
                known = ", ".join(sorted(BUILTIN_REDUCERS))
                raise ValueError(f"unknown reducer {spec!r}; known reducers: {known}")
            self.name = spec
            self.function = function
        elif callable(spec):
            self.name = getattr(spec, "__name__", type(spec).__name__)
            self.function = spec
        else:
            raise TypeError(
                f"a reducer is a name ({', '.join(sorted(BUILTIN_REDUCERS))}) or a callable "
                f"(old, new) -> new, got {type(spec).__name__}"
            )

    @property
    def is_builtin(self) -> bool:
        """Whether this is one of the named built-in reducers."""
        return BUILTIN_REDUCERS.get(self.name) is self.function

    def __call__(self, old: Any, new: Any) -> Any:
        """Combine `old` and `new` into the value to store."""
        return self.function(old, new)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reducer) and other.function is self.function

    def __hash__(self) -> int:
        return hash(self.function)

    def __repr__(self) -> str:
        return f"Reducer({self.name!r})"


ReducerSpec: TypeAlias = str | ReducerFunction | Reducer
"""What `reducers=` and `Reducer(...)` accept: a built-in name, a callable, or a Reducer."""

REPLACE = Reducer("replace")
APPEND = Reducer("append")


def reducer_from_metadata(metadata: list[Any]) -> Reducer | None:
    """The last `Reducer` in a field's `Annotated` metadata, or None when it has none."""
    found = None
    for item in metadata:
        if isinstance(item, Reducer):
            found = item
    return found

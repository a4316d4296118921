"""StateManager: a run's state, described by a pydantic model, stored on the py_trees blackboard.

Each StateManager owns a blackboard namespace of its own (`/jianmu/run_<hex>`), so any number of
runs in one process never see each other's keys, and py_trees tools (blackboard displays, the
activity stream, native behaviours with a `Client` on that namespace) see the values.

Every write goes through one path: the field's reducer combines the old value with the new one,
the field's TypeAdapter validates the result, and only then is the blackboard written. A refused
write raises `StateValidationError` and leaves the state exactly as it was. After a successful
write the version goes up by one and subscribers hear which keys changed.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Self

from py_trees.blackboard import Blackboard
from pydantic import BaseModel, ValidationError

from jianmu_bt.runtime.namespaces import claim_namespace, register_keys, release_keys, write_values
from jianmu_bt.runtime.reducers import APPEND, REPLACE, Reducer, ReducerSpec
from jianmu_bt.runtime.state_schema import (
    AgentState,
    StateClosedError,
    StateToolCall,
    StateValidationError,
    UnknownStateKeyError,
    compile_schema,
)

__all__ = [
    "AgentState",
    "StateClosedError",
    "StateManager",
    "StateSubscriber",
    "StateToolCall",
    "StateValidationError",
    "UnknownStateKeyError",
]

logger = logging.getLogger(__name__)

# One lock serialises the state writes of every run in the process. A write holds the GIL for
# nearly all of its length anyway (reducing, validating, storing), so runs in other threads lose
# nothing to it; a lock per run was an object per run, thousands of them for the collector to
# walk when many runs wait at once.
_WRITES = threading.RLock()

StateSubscriber = Callable[[frozenset[str]], None]
"""A callback told, after each successful write, which state fields changed."""

_MISSING: Any = object()


class StateManager:
    """A run's state: fields from a pydantic schema, values on the py_trees blackboard.

    - `get(key)` / `read_port(key)` are a dict lookup; `get()` returns a shallow copy of the
      whole state (the values themselves are shared: treat them as read-only and write through
      the manager, so validation, reducers and subscribers apply).
    - `write_port` applies the field's reducer; `set` replaces; `update` writes many fields all
      or nothing; each validates with the field's own TypeAdapter (types and `Annotated`
      constraints; a model's `@field_validator`/`@model_validator` run in `model()` and
      `restore()`, which validate the whole model).
    - `snapshot()`/`to_json()` and `restore()`/`from_snapshot()` round-trip through JSON.
    - `close()` (or leaving a `with` block, or garbage collection) removes the run's keys.

    Writes are serialised by a lock, so worker threads may write too; subscribers run in the
    writing thread, after the lock is released. The lock is one for every state of the process
    (`_WRITES`, re-entrant: a reducer may write another state).
    """

    def __init__(
        self,
        schema: type[BaseModel],
        *,
        initial: Mapping[str, Any] | None = None,
        reducers: Mapping[str, ReducerSpec] | None = None,
        namespace: str | None = None,
    ) -> None:
        """Validate `initial`, fill schema defaults, and put the values on the blackboard.

        `reducers` overrides the reducers named in the schema's field metadata; an unknown
        field or reducer name is an error here, not at the first write.
        """
        plan = compile_schema(schema)
        field_reducers = plan.reducers  # shared with every run of the schema unless overridden
        if reducers:
            field_reducers = dict(field_reducers)
            for key, spec in reducers.items():
                if key not in plan.fields:
                    raise plan.unknown(key)
                try:
                    field_reducers[key] = Reducer(spec)
                except (TypeError, ValueError) as exc:
                    raise type(exc)(f"reducer for state field {key!r}: {exc}") from None
        values = plan.starting_values(initial)

        self._schema = schema
        self._plan = plan
        self._fields = plan.fields
        self._reducers = field_reducers
        self._namespace = claim_namespace(namespace)
        # Each field's blackboard key, in the schema's order (a tuple: the one dict from names
        # to places is the plan's, shared by every run of the schema).
        self._paths = tuple(f"{self._namespace}/{name}" for name in plan.names)
        self._positions = plan.positions
        self._changed = plan.changed
        self._all_keys = plan.all_keys
        self._subscribers: tuple[StateSubscriber, ...] = ()
        self._version = 0
        self._closed = False

        try:
            register_keys(self._paths)
            self._store(values)
        except BaseException:
            self.close()
            raise

    # ----------------------------------------------------------------------------- properties
    @property
    def schema(self) -> type[BaseModel]:
        """The pydantic model that describes this state."""
        return self._schema

    @property
    def namespace(self) -> str:
        """The blackboard namespace holding this run's keys (`<namespace>/<field>`)."""
        return self._namespace

    @property
    def fields(self) -> tuple[str, ...]:
        """The state's field names, in schema order."""
        return self._plan.names

    @property
    def version(self) -> int:
        """A counter incremented by every successful write, to notice changes cheaply."""
        return self._version

    @property
    def closed(self) -> bool:
        """Whether `close()` has released this run's blackboard keys."""
        return self._closed

    def blackboard_key(self, key: str) -> str:
        """The absolute blackboard key of field `key` (for py_trees clients and displays)."""
        position = self._positions.get(key)
        if position is None:
            raise self._plan.unknown(key)
        return self._paths[position]

    # ---------------------------------------------------------------------------------- reads
    def get(self, key: str | None = None, default: Any = _MISSING) -> Any:
        """One field's value, or with no key a shallow dict copy of the whole state.

        An unknown key raises `UnknownStateKeyError` (a KeyError naming the known fields)
        unless `default` is given.
        """
        if key is None:
            storage = Blackboard.storage
            try:
                return {
                    name: storage[path]
                    for name, path in zip(self._plan.names, self._paths, strict=True)
                }
            except KeyError:
                raise self._gone() from None
        position = self._positions.get(key)
        if position is None:
            if default is _MISSING:
                raise self._plan.unknown(key)
            return default
        try:
            return Blackboard.storage[self._paths[position]]
        except KeyError:
            raise self._gone() from None

    def read_port(self, key: str, default: Any = None) -> Any:
        """A node's input: the value of field `key`, or `default` for a key the schema lacks."""
        position = self._positions.get(key)
        if position is None:
            return default
        try:
            return Blackboard.storage[self._paths[position]]
        except KeyError:
            raise self._gone() from None

    def model(self) -> BaseModel:
        """The current state as a schema instance, validated as a whole (model validators run)."""
        try:
            return self._schema.model_validate(self.get(), by_alias=False, by_name=True)
        except ValidationError as exc:
            raise self._plan.whole_state_error(exc, self.get()) from None

    # --------------------------------------------------------------------------------- writes
    def write_port(self, key: str, value: Any) -> None:
        """A node's output: combine `value` into field `key` with its reducer, validate, write."""
        self._write_one(key, value, self._reducers.get(key))

    def set(self, key: str, value: Any) -> None:
        """Replace field `key` with `value`, bypassing its reducer (still validated)."""
        self._write_one(key, value, REPLACE)

    def append_port_messages(self, *messages: Any, key: str = "messages") -> None:
        """Append messages (dicts, or lists of them) to list field `key`, whatever its reducer."""
        items: list[Any] = []
        for message in messages:
            if isinstance(message, (list, tuple)):
                items.extend(message)
            else:
                items.append(message)
        if items:
            self._write_one(key, items, APPEND)

    def update(self, values: Mapping[str, Any]) -> None:
        """Write several fields at once (reducers apply), all or nothing.

        Every value is reduced and validated before anything is written; on any error nothing
        changes. Subscribers hear of all the keys in one call; an empty mapping writes nothing.
        """
        if not values:
            return
        self._check_open()
        paths, positions = self._paths, self._positions
        fields, reducers = self._fields, self._reducers
        with _WRITES:
            storage = Blackboard.storage
            new_values: dict[str, Any] = {}
            for key, value in values.items():
                position = positions.get(key)
                if position is None:
                    raise self._plan.unknown(key, value)
                path = paths[position]
                if path not in storage:
                    raise self._gone()
                new_values[key] = fields[key].reduce(reducers[key], storage[path], value)
            self._store(new_values)
            self._version += 1
        self._notify(frozenset(new_values))

    def _write_one(self, key: str, value: Any, reducer: Reducer | None) -> None:
        position = self._positions.get(key)
        if position is None:
            raise self._plan.unknown(key, value)
        path = self._paths[position]
        self._check_open()
        with _WRITES:
            try:
                old = Blackboard.storage[path]
            except KeyError:
                raise self._gone() from None
            new = self._fields[key].reduce(reducer or REPLACE, old, value)
            if Blackboard.activity_stream is None:
                Blackboard.storage[path] = new
            else:
                write_values({path: new})
            self._version += 1
        self._notify(self._changed[key])

    def _store(self, values: Mapping[str, Any]) -> None:
        """Put already validated values on the blackboard."""
        paths, positions = self._paths, self._positions
        write_values({paths[positions[key]]: value for key, value in values.items()})

    # ---------------------------------------------------------------------------- subscribers
    def subscribe(self, callback: StateSubscriber) -> Callable[[], None]:
        """Call `callback(changed_keys)` after each successful write; returns an unsubscribe.

        Callbacks run synchronously in the writing thread; one that raises is logged and the
        write (and the other callbacks) go on. A write of an equal value still counts as a
        change (comparing values would cost a deep equality check on every write).
        """
        if not callable(callback):
            raise TypeError(f"a state subscriber must be callable, got {type(callback).__name__}")
        with _WRITES:
            self._subscribers = (*self._subscribers, callback)
        return _Unsubscribe(self, callback)

    def unsubscribe(self, callback: StateSubscriber) -> None:
        """Stop calling `callback` (one equal to it: a bound method of the same object works
        too); nothing happens when it is not subscribed."""
        with _WRITES:
            subscribers = list(self._subscribers)
            if callback in subscribers:
                subscribers.remove(callback)
                self._subscribers = tuple(subscribers)

    def _notify(self, changed: frozenset[str]) -> None:
        for callback in self._subscribers:
            try:
                callback(changed)
            except Exception:
                logger.exception("state subscriber %r failed on change of %s", callback, changed)

    # ----------------------------------------------------------------------- snapshot/restore
    def snapshot(self) -> dict[str, Any]:
        """The whole state as JSON-ready data (pydantic `mode="json"`), which `restore` reads."""
        return self._schema.model_construct(**self.get()).model_dump(mode="json")

    def exact_snapshot(self) -> dict[str, Any]:
        """The state as a durable run records it: values as they are (the store's encoding keeps
        them exact), fields of models or dataclasses as pydantic dumps them; `restore` reads it."""
        return self.exact_values(self._plan.names)

    def exact_values(self, keys: Iterable[str]) -> dict[str, Any]:
        """The fields `keys` as `exact_snapshot` has them (what a checkpoint delta records)."""
        fields, values = self._fields, {}
        for name in keys:
            value, plan = self.get(name), fields.get(name)
            values[name] = plan.adapter.dump_python(value) if plan and plan.dump else value
        return values

    def to_json(self) -> str:
        """The snapshot as a JSON string."""
        return self._schema.model_construct(**self.get()).model_dump_json()

    def restore(self, data: Mapping[str, Any] | str | bytes) -> None:
        """Replace the whole state with a snapshot (a mapping or JSON text), all or nothing.

        The snapshot is validated as a whole model first (fields it leaves out get their
        defaults; unknown fields are refused); on any error the state is unchanged.
        """
        self._check_open()
        values = self._plan.validate_snapshot(self._schema, data)
        with _WRITES:
            if any(path not in Blackboard.storage for path in self._paths):
                raise self._gone()
            self._store(values)
            self._version += 1
        self._notify(self._all_keys)

    @classmethod
    def from_snapshot(
        cls,
        schema: type[BaseModel],
        data: Mapping[str, Any] | str | bytes,
        *,
        reducers: Mapping[str, ReducerSpec] | None = None,
        namespace: str | None = None,
    ) -> Self:
        """A new StateManager holding the state of a snapshot (in a namespace of its own)."""
        values = compile_schema(schema).validate_snapshot(schema, data)
        return cls(schema, initial=values, reducers=reducers, namespace=namespace)

    # ------------------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Remove this run's keys from the blackboard; reads and writes then raise. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._subscribers = ()
        release_keys(self._paths, self._namespace)

    def __del__(self) -> None:
        # A state dropped without close() frees its keys when collected. (`__del__`, not a
        # weakref.finalize: that costs about 300 bytes and three tracked objects per run.)
        if not getattr(self, "_closed", True):  # True: __init__ did not get that far
            with contextlib.suppress(Exception):  # at interpreter exit the blackboard may be gone
                self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"version={self._version}"
        return f"StateManager({self._schema.__name__}, namespace={self._namespace!r}, {state})"

    def _check_open(self) -> None:
        if self._closed:
            raise self._gone()

    def _gone(self) -> StateClosedError:
        if self._closed:
            return StateClosedError(f"the state in {self._namespace!r} is closed")
        return StateClosedError(
            f"the state's keys in {self._namespace!r} are no longer on the blackboard "
            "(was py_trees.blackboard.Blackboard.clear() called?)"
        )


class _Unsubscribe:
    """What `subscribe` returns: called, it removes the subscriber (one small object, where a
    functools.partial of a bound method makes three)."""

    __slots__ = ("_callback", "_state")

    def __init__(self, state: StateManager, callback: StateSubscriber) -> None:
        self._state = state
        self._callback = callback

    def __call__(self) -> None:
        self._state.unsubscribe(self._callback)

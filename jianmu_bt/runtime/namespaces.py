"""A run's place on the py_trees blackboard: its namespace, its keys' metadata, its writes.

Each StateManager claims a namespace of its own (`claim_namespace`), never given to two live
runs at once, and releases it with its keys (`release_keys`: its close, or its garbage
collection).

The keys are registered as py_trees' own clients register theirs, so blackboard displays list
them and the activity stream records the writes, but without a py_trees `Client` per run: one
process-wide writer, "jianmu state" (`state_writer()`), is named as every state key's writer,
and each key's `KeyMetaData` makes its read/write/exclusive sets only when something reads them
(a display, or a native client registering the same key). A py_trees Client with its sets, and
three sets for each key, were about 1.4 KiB per run plus 0.9 KiB per field, most of the memory a
small run's state took.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

import py_trees
from py_trees.blackboard import ActivityItem, ActivityType, Blackboard, KeyMetaData

_NAMESPACE_ROOT = "/jianmu"
_live_namespaces: set[str] = set()
_namespaces_lock = threading.Lock()
_writer: py_trees.blackboard.Client | None = None


def claim_namespace(namespace: str | None) -> str:
    """A fresh run namespace, or the caller's one after checking no live run holds it."""
    if namespace is None:
        name = f"{_NAMESPACE_ROOT}/run_{os.urandom(8).hex()}"
    else:
        name = "/" + namespace.strip().strip("/")
        if name == "/" or "." in name or "//" in name:
            raise ValueError(
                f"invalid state namespace {namespace!r}: use a non-empty path such as "
                "'/jianmu/my_run' (no '.', which py_trees reads as attribute access)"
            )
    with _namespaces_lock:
        if name in _live_namespaces:
            raise ValueError(f"state namespace {name!r} is already used by a live StateManager")
        _live_namespaces.add(name)
    return name


def release_namespace(namespace: str) -> None:
    """Free a namespace for a later run."""
    with _namespaces_lock:
        _live_namespaces.discard(namespace)


def state_writer() -> py_trees.blackboard.Client:
    """The py_trees client named as the writer of every run's state keys (made once).

    It registers no keys itself; it is listed in `Blackboard.clients` (again after a
    `Blackboard.clear()`) so displays can name it.
    """
    global _writer
    with _namespaces_lock:
        if _writer is None:
            _writer = py_trees.blackboard.Client(name="jianmu state")
        writer = _writer
    Blackboard.clients.setdefault(writer.id(), writer.name)
    return writer


class _KeySet:
    """A `KeyMetaData` set made on first use (most state keys are never looked at)."""

    def __init__(self, writer: bool = False) -> None:
        self._writer = writer
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, meta: Any, owner: type | None = None) -> Any:
        if meta is None:
            return self
        made: set[uuid.UUID] = {meta.writer} if self._writer else set()
        setattr(meta, self._name, made)  # from now on the instance's own set is found
        return made


class StateKeyMetaData(KeyMetaData):
    """py_trees' metadata of a state key: written by `writer`, sets made when first read."""

    read = _KeySet()
    write = _KeySet(writer=True)
    exclusive = _KeySet()

    def __init__(self, writer: uuid.UUID) -> None:  # no super(): it would make the three sets
        self.writer = writer

    def others(self) -> bool:
        """Whether any client other than the writer registered the key."""
        sets = vars(self)
        return bool(
            sets.get("read") or sets.get("exclusive") or (sets.get("write", set()) - {self.writer})
        )


def register_keys(paths: Iterable[str]) -> None:
    """Register the state's keys (absolute paths) with the state writer's WRITE access."""
    writer = state_writer().id()
    metadata = Blackboard.metadata
    for path in paths:
        known = metadata.get(path)
        if known is None:
            metadata[path] = StateKeyMetaData(writer)
        elif known.exclusive:
            raise ValueError(f"blackboard key {path!r} already has an exclusive writer")
        else:
            known.write.add(writer)


def write_values(values: Mapping[str, Any]) -> None:
    """Put values on the blackboard by path; the activity stream, when on, records each write."""
    storage = Blackboard.storage
    stream = Blackboard.activity_stream
    if stream is None:
        storage.update(values)
        return
    writer = state_writer()
    for path, value in values.items():
        if path in storage:
            kind, previous = ActivityType.WRITE, storage[path]
        else:
            kind, previous = ActivityType.INITIALISED, None
        stream.push(
            ActivityItem(
                key=path,
                client_name=writer.name,
                client_id=writer.id(),
                activity_type=kind.value,
                previous_value=previous,
                current_value=value,
            )
        )
        storage[path] = value


def release_keys(paths: tuple[str, ...], namespace: str) -> None:
    """Remove the run's values and key registrations, then free its namespace.

    A key that a native py_trees client registered too keeps its metadata (without the state
    writer); its value goes all the same: the run that owned it has ended.
    """
    writer = _writer.id() if _writer is not None else None
    metadata, storage = Blackboard.metadata, Blackboard.storage
    for path in paths:
        meta = metadata.get(path)
        if isinstance(meta, StateKeyMetaData) and not meta.others():
            del metadata[path]
        elif meta is not None:
            meta.write.discard(writer)
            if not (meta.read or meta.write or meta.exclusive):
                del metadata[path]
        storage.pop(path, None)
    release_namespace(namespace)

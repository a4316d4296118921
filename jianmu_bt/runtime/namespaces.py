"""Blackboard namespaces of runs: each StateManager claims one of its own and releases it.

A namespace is live from `claim_namespace` until `release_blackboard` (the StateManager's close,
or its garbage collection) and is never given to two live runs at once.
"""

from __future__ import annotations

import contextlib
import threading
import uuid

import py_trees
from py_trees.blackboard import Blackboard

_NAMESPACE_ROOT = "/jianmu"
_live_namespaces: set[str] = set()
_namespaces_lock = threading.Lock()


def claim_namespace(namespace: str | None) -> str:
    """A fresh run namespace, or the caller's one after checking no live run holds it."""
    if namespace is None:
        name = f"{_NAMESPACE_ROOT}/run_{uuid.uuid4().hex[:16]}"
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


def release_blackboard(
    client: py_trees.blackboard.Client, paths: tuple[str, ...], namespace: str
) -> None:
    """Unregister the run's blackboard client and remove its values (close() or garbage)."""
    for path in paths:
        # KeyError: Blackboard.clear() already dropped the key's metadata
        with contextlib.suppress(KeyError):
            client.unregister_key(path, clear=True, update_namespace_cache=False)
        Blackboard.storage.pop(path, None)
    Blackboard.clients.pop(client.id(), None)
    release_namespace(namespace)


def release_namespace(namespace: str) -> None:
    """Free a namespace for a later run."""
    with _namespaces_lock:
        _live_namespaces.discard(namespace)

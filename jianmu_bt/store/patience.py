"""Waiting out a store that is briefly unavailable: a restarting server, a busy file, a full disk.

A durable run cannot take one step without its record, so a write that fails for a reason that
may pass (StoreUnavailableError) is tried again for a while before the run gives up and stops.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

from jianmu_bt.store.errors import StoreUnavailableError

__all__ = ["DEFAULT_PATIENCE", "PATIENCE_VARIABLE", "default_patience", "patiently"]

T = TypeVar("T")

DEFAULT_PATIENCE = 10.0
"""Seconds a durable run waits for its store to come back before it stops (a PostgreSQL restart
takes a few)."""

PATIENCE_VARIABLE = "JIANMU_STORE_PATIENCE"
"""The environment variable that sets the patience in seconds (a number >= 0)."""

_FIRST_WAIT = 0.05


def default_patience() -> float:
    """`$JIANMU_STORE_PATIENCE` seconds when set to a number >= 0, else DEFAULT_PATIENCE."""
    text = os.environ.get(PATIENCE_VARIABLE, "").strip()
    try:
        value = float(text) if text else DEFAULT_PATIENCE
    except ValueError:
        raise ValueError(
            f"{PATIENCE_VARIABLE}={text!r}: give a number of seconds (for example 10)"
        ) from None
    if not value >= 0:
        raise ValueError(f"{PATIENCE_VARIABLE}={text!r}: give a number of seconds >= 0")
    return value


_LONGEST_WAIT = 1.0


def patiently(call: Callable[[], T], patience: float = DEFAULT_PATIENCE) -> T:
    """`call()`, tried again while it raises StoreUnavailableError, for up to `patience` seconds
    (waits doubling from 50 ms to 1 s); the last error is raised when the time is up.

    The caller blocks while it waits. A write that failed this way may have been committed all
    the same (a connection cut after its COMMIT): only calls whose repetition is harmless are
    retried (a journal row appended twice reads as once: the latest row of each call counts).
    """
    deadline = time.monotonic() + max(0.0, patience)
    wait = _FIRST_WAIT
    while True:
        try:
            return call()
        except StoreUnavailableError:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            time.sleep(min(wait, left))
            wait = min(wait * 2, _LONGEST_WAIT)

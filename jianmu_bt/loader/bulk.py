"""`paused_gc()`: the cyclic garbage collector held off while the loader builds a tree.

Loading allocates tens of thousands of long-lived objects (positions, models, behaviours) and
almost no garbage cycles. Each allocation burst triggers collections that walk every live
object again, so a large tree spends most of its load time in the collector. CPython's advice
for bulk construction is to pause it (`gc.disable()`) and restore it afterwards; this does that
for the outermost of any nested or concurrent loads, and always restores it (`finally`).
Reference counting still frees everything that is not part of a cycle while it is paused.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def paused_gc() -> Iterator[None]:
    """Hold off cyclic garbage collection inside the block (restored as it was on leaving).

    Nested and concurrent blocks share one pause: the collector comes back when the last one
    leaves, and only if it was enabled when the first one entered.
    """
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()

"""GuardContext: the run-wide counters that policies read (effect budgets, rate limits).

The context is plain data plus a clock: how many effects of each tag the run has used, when each
tool was last called, and an optional read-only view of the run's state for argument predicates.
It survives a process restart through `to_dict()` / `from_dict()`; the clock is wall time
(`time.time`) so timestamps taken before a pause still mean something after the resume.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

#: Timestamps kept per tool; a RateLimit may not ask for more calls per window than this.
HISTORY_LIMIT = 1000

Clock = Callable[[], float]


class GuardContext:
    """Counters of one run, read by policies and updated by `GuardEnforcer.record`.

    - `effect_counts`: effect tag -> calls with that tag that succeeded so far (budgets);
    - `call_times`: canonical tool name -> wall-clock times of its latest runs (rate limits);
    - `state`: a read-only mapping of state values for predicates (not part of the snapshot:
      the run's state is saved by its own StateManager and attached again on resume);
    - `clock`: the time source, `time.time` by default; tests pass a fake one.
    """

    __slots__ = ("_call_times", "clock", "effect_counts", "state")

    def __init__(
        self,
        effect_counts: Mapping[str, int] | None = None,
        call_times: Mapping[str, Iterable[float]] | None = None,
        state: Mapping[str, Any] | None = None,
        clock: Clock = time.time,
    ) -> None:
        self.effect_counts: dict[str, int] = {
            k.lower(): int(v) for k, v in (effect_counts or {}).items()
        }
        self._call_times: dict[str, deque[float]] = {}
        for name, times in (call_times or {}).items():
            self._call_times[name.lower()] = deque(sorted(times), maxlen=HISTORY_LIMIT)
        self.state: Mapping[str, Any] = MappingProxyType(dict(state or {}))
        self.clock = clock

    # -- reading ---------------------------------------------------------------------------

    def now(self) -> float:
        """The current time on this context's clock (seconds)."""
        return self.clock()

    def effect_count(self, tag: str) -> int:
        """How many successful calls carried effect `tag` so far."""
        return self.effect_counts.get(tag.lower(), 0)

    def call_times(self, tool: str) -> list[float]:
        """The recorded run times of `tool` (canonical name), oldest first."""
        return list(self._call_times.get(tool.lower(), ()))

    # -- writing ---------------------------------------------------------------------------

    def add_effects(self, tags: Iterable[str]) -> None:
        """Count one use of each effect tag."""
        for tag in tags:
            key = tag.lower()
            self.effect_counts[key] = self.effect_counts.get(key, 0) + 1

    def add_call_time(self, tool: str, at: float | None = None) -> None:
        """Record that `tool` ran at `at` (default: now); only the latest HISTORY_LIMIT are kept."""
        times = self._call_times.setdefault(tool.lower(), deque(maxlen=HISTORY_LIMIT))
        times.append(self.now() if at is None else at)

    def with_state(self, state: Mapping[str, Any] | None) -> GuardContext:
        """Attach a (new) state view in place and return self, e.g. after `from_dict`."""
        self.state = MappingProxyType(dict(state or {}))
        return self

    def copy(self) -> GuardContext:
        """An independent copy of the counters sharing the clock and the state view.

        `GuardEnforcer.preflight` plans a batch on a copy, so earlier calls of the batch count
        against budgets and rate limits without touching the real counters.
        """
        twin = GuardContext(self.effect_counts, None, None, self.clock)
        twin._call_times = {k: deque(v, maxlen=HISTORY_LIMIT) for k, v in self._call_times.items()}
        twin.state = self.state
        return twin

    # -- snapshot --------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The counters as JSON-ready data (the state view and the clock are not included)."""
        return {
            "version": 1,
            "effect_counts": dict(self.effect_counts),
            "call_times": {k: list(v) for k, v in self._call_times.items() if v},
        }

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        state: Mapping[str, Any] | None = None,
        clock: Clock = time.time,
    ) -> GuardContext:
        """A new context from `to_dict()` output; GuardSnapshotError names a bad entry."""
        return cls(state=state, clock=clock).restore(data)

    def restore(self, data: Mapping[str, Any]) -> GuardContext:
        """Replace the counters with a snapshot's (keeping clock and state) and return self.

        A bad snapshot raises GuardSnapshotError naming the entry and changes nothing.
        """
        from jianmu_bt.guard.snapshots import ContextSnapshot, load_snapshot  # pydantic, lazily

        snap = load_snapshot(ContextSnapshot, "guard context", data)
        self.effect_counts = {k.lower(): v for k, v in snap.effect_counts.items()}
        self._call_times = {
            k.lower(): deque(sorted(v), maxlen=HISTORY_LIMIT) for k, v in snap.call_times.items()
        }
        return self

    def __repr__(self) -> str:
        calls = {k: len(v) for k, v in self._call_times.items()}
        return f"GuardContext(effect_counts={self.effect_counts!r}, calls={calls!r})"

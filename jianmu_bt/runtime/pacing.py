"""TickPacer: the runner's ticks-per-second cap, which only ticks that no work asked for pay.

A token bucket: up to `burst` ticks in a row go at once, and a tree that keeps changing by
itself (a `Repeat` over instant behaviours, idle polling, deadlines) is held to `rate` ticks a
second on average. Work that finishes (a node's task ended, a state write from outside the tick)
refills the bucket, so the ticks it triggers run as soon as it is done: a busy agent loop, whose
every tick follows an LLM reply or a tool result, never waits for the cap.

With it, what else decides when the next tick is due: `seconds_to_deadline` (a `Timeout`
decorator's finish time, the idle interval) and `only_work_can_move` (a tick now would change
nothing until work in flight ends).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable
from typing import cast

import py_trees
from py_trees.common import Status

from jianmu_bt.runtime.async_node import AsyncNode

#: Ticks that may follow each other without waiting before the rate applies.
TICK_BURST = 10


class TickPacer:
    """How long to wait before each tick so that self-driven ticks keep to `rate` a second."""

    __slots__ = ("_allowance", "_burst", "_gap", "_last")

    def __init__(self, rate: float, burst: int = TICK_BURST) -> None:
        """`rate` ticks a second on average (0 or less: no cap), bursts of `burst` ticks."""
        self._gap = 1.0 / rate if rate > 0 else 0.0
        self._burst = float(burst)
        self._allowance = self._burst
        self._last = time.monotonic()

    def work_done(self) -> None:
        """Work finished since the last tick: the ticks it triggers go without waiting."""
        self._allowance = self._burst

    def delay(self) -> float:
        """Seconds to wait before the next tick (0 while the bucket holds a token); takes one."""
        if not self._gap:
            return 0.0
        now = time.monotonic()
        allowance = min(self._burst, self._allowance + (now - self._last) / self._gap)
        wait = 0.0
        if allowance < 1.0:
            wait = (1.0 - allowance) * self._gap
            allowance = 1.0
        self._last = now + wait
        self._allowance = allowance - 1.0
        return wait


def seconds_to_deadline(
    timeouts: Iterable[py_trees.decorators.Timeout], idle_interval: float | None
) -> float | None:
    """Seconds until the next deadline a tick must meet: a running `Timeout` decorator's finish
    time (a millisecond after, so that the tick finds it passed), or `idle_interval`; None when
    there is none."""
    deadline = idle_interval
    now = time.monotonic()
    for node in timeouts:
        if node.status == Status.RUNNING:
            remaining = max(node.finish_time - now, 0.0) + 1e-3
            deadline = remaining if deadline is None else min(deadline, remaining)
    return deadline


def only_work_can_move(nodes: Iterable[py_trees.behaviour.Behaviour]) -> bool:
    """True when a tick now would change no status: every RUNNING node is either an AsyncNode
    (as ours: its status is its work's) whose work is still in flight, a Sequence or Selector
    with memory (as py_trees': it resumes at its running child), or a Repeat, Retry or Inverter
    (as py_trees') whose child runs. The next tick may then wait for the work to end, whatever
    the last tick changed or wrote."""
    running = Status.RUNNING
    for node in nodes:
        if node.status is not running:
            continue
        kind = _kind(type(node))
        if kind == _RESUMES:
            if not cast(py_trees.composites.Sequence, node).memory:
                return False
        elif kind == _FOLLOWS:
            if cast(py_trees.decorators.Decorator, node).decorated.status is not running:
                return False  # its child ended: the next tick restarts it, or ends the loop
        elif kind != _WORKS or not cast(AsyncNode, node).working:
            return False
    return True


_RESUMES, _WORKS, _FOLLOWS, _OTHER = 1, 2, 3, 0
# py_trees decorators that stay RUNNING, unchanged, while their child runs.
_FOLLOWERS = (py_trees.decorators.Repeat, py_trees.decorators.Retry, py_trees.decorators.Inverter)


@functools.cache
def _kind(cls: type) -> int:
    """How a RUNNING node of class `cls` behaves at its next tick, by its unchanged methods."""
    for composite in (py_trees.composites.Sequence, py_trees.composites.Selector):
        if issubclass(cls, composite) and cls.tick is composite.tick:
            return _RESUMES
    for decorator in _FOLLOWERS:
        if (
            issubclass(cls, decorator)
            and cls.update is decorator.update
            and cls.tick is py_trees.decorators.Decorator.tick
        ):
            return _FOLLOWS
    if (
        issubclass(cls, AsyncNode)
        and cls.update is AsyncNode.update
        and cls.tick is py_trees.behaviour.Behaviour.tick
    ):
        return _WORKS
    return _OTHER

"""TreeRunner: ticks a py_trees tree when something changes, and sleeps otherwise.

A tick happens when a node's async work finished, state was written, a deadline came (a py_trees
`Timeout` decorator's finish time, a `idle_interval`), or the previous tick changed a status (so
decorators such as `Retry` make progress), unless every running node only waits for work in
flight (our AsyncNodes, under Sequences and Selectors with memory): a tick then could change
nothing, whatever the last one changed or wrote, and the next one waits for the work. Ticks
that follow finished work run at once; the others are capped per second (`TickPacer`), and all
of them in total. The run ends at the root's first SUCCESS or FAILURE; halting cancels every
in-flight task, and nothing keeps running after `run`/`arun` return.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import py_trees
from anyio.from_thread import BlockingPortal
from py_trees.common import Status

from jianmu_bt.runtime.async_node import ContextNode
from jianmu_bt.runtime.background import BackgroundLoop
from jianmu_bt.runtime.context import RunContext
from jianmu_bt.runtime.events import EventBus
from jianmu_bt.runtime.pacing import TickPacer, only_work_can_move, seconds_to_deadline
from jianmu_bt.runtime.progress import node_keys, tree_progress
from jianmu_bt.runtime.results import (
    RunResult as RunResult,  # re-exported: its old home
    failure_reason,
)
from jianmu_bt.runtime.services import RunGuard
from jianmu_bt.runtime.state import StateManager
from jianmu_bt.runtime.stopping import RunStopped, stop_of
from jianmu_bt.runtime.task_groups import (
    LOOP_TASKS,
    DeferredStarts,
    create_task_group,
    on_asyncio,
)
from jianmu_bt.runtime.wakeup import Wakeup

# Every run needs anyio's asyncio backend, which anyio imports on a process's first run (about
# 10 ms, most of a first small batch). Imported with the runner instead, a process's first run
# starts as fast as the next ones; `jianmu validate` imports no runner. A later anyio that moved
# the module imports it on first use again.
with contextlib.suppress(ImportError):
    import anyio._backends._asyncio

if TYPE_CHECKING:
    from jianmu_bt.runtime.journal import RunJournal

TERMINAL = (Status.SUCCESS, Status.FAILURE)
# The longest wait between looks at a tree that nothing can wake (see `stall_interval`).
MAX_STALL_INTERVAL = 1.0


class _NoDeadline:
    """Entered where `anyio.move_on_after(timeout)` is when a run has no timeout: it does
    nothing, and costs nothing (static methods: a with-block binds no `__exit__` to keep for as
    long as the run lasts)."""

    __slots__ = ()
    cancelled_caught = False

    @staticmethod
    def __enter__() -> _NoDeadline:
        return NO_DEADLINE

    @staticmethod
    def __exit__(*exc_info: object) -> None:
        return None


NO_DEADLINE = _NoDeadline()


class TreeRunner:
    """Runs one tree over one StateManager: `tick()`, `run()` (blocking) and `await arun()`.

    `services` are handed to the nodes through their RunContext (for example `guard`, `llm`).
    `max_ticks` bounds the total number of ticks of a run; `max_ticks_per_second` (0: no cap) the
    average rate of the ticks no work asked for (see `TickPacer`: a tick that follows finished
    work never waits, and up to TICK_BURST others in a row do not either);
    `idle_interval` (seconds, None = never) ticks an idle tree anyway, for plain py_trees behaviours
    that poll something outside the run. When a tick changed nothing and no work is in flight,
    nothing could wake the runner, so it ticks again after `stall_interval` seconds, doubling the
    wait (up to a second) while nothing changes.
    """

    def __init__(
        self,
        root: py_trees.behaviour.Behaviour,
        state: StateManager,
        *,
        events: EventBus | None = None,
        services: Mapping[str, Any] | None = None,
        max_ticks: int | None = None,
        max_ticks_per_second: float = 1000.0,
        idle_interval: float | None = None,
        stall_interval: float = 0.02,
        run_id: str | None = None,
    ) -> None:
        self.root = root
        self.state = state
        self.context = RunContext(state, events, services, run_id)
        self.max_ticks = max_ticks
        self.max_ticks_per_second = max_ticks_per_second
        self.idle_interval = idle_interval
        self.stall_interval = stall_interval
        self.tick_count = 0
        self.nodes = list(root.iterate())
        for node in self.nodes:
            bind = getattr(node, "bind", None)
            if callable(bind):
                bind(self.context)
        self._statuses = [node.status for node in self.nodes]
        # a tuple: the shared empty one when there are none (most trees)
        self._timeouts = tuple(n for n in self.nodes if isinstance(n, py_trees.decorators.Timeout))
        self._changed = True
        self._wakeup = Wakeup()  # open while a run loop (arun) ticks: wake() reaches it
        self._background: BackgroundLoop | None = None
        self._error = ""
        # `close` unsubscribes by the callback: what `subscribe` returns is not kept (an object
        # per run for the collector to walk). The wakeup is the callback: a state write wakes us.
        state.subscribe(self._wakeup)
        self._paused = False
        # The nodes whose status changed since `progress_changes` last looked (once it did).
        self._moved: set[int] | None = None

    @functools.cached_property
    def node_keys(self) -> list[str]:
        """Each node's stable key (`node_keys`), in `root.iterate()` order: worked out when first
        needed (a journal, a checkpoint), and given to the nodes as their `node_key`."""
        keys = node_keys(self.root)
        for node, key in zip(self.nodes, keys, strict=True):
            if isinstance(node, ContextNode):
                node.node_key = key
        return keys

    @property
    def events(self) -> EventBus:
        """The run's event bus: `runner.events.subscribe(callback)`."""
        return self.context.events

    # -- waking ----------------------------------------------------------------------------

    def wake(self) -> None:
        """Ask for a tick soon; safe to call from any thread."""
        self._wakeup()

    # -- ticking ---------------------------------------------------------------------------

    def _raise_escaped(self) -> None:
        # A BaseException from work is not a node's outcome: it ends the run (see RunContext).
        escaped = self.context.escaped
        if escaped is not None:
            self.context.escaped = None
            stopped = stop_of(escaped)
            if stopped is not None:  # the run was stopped on purpose: its reason, not a trace
                raise stopped.error from None
            raise escaped

    def _tick_once(self) -> Status:
        self.tick_count += 1
        try:
            self.root.tick_once()
        except Exception as exc:  # a plain behaviour raised in update(): end the run cleanly
            self._error = f"a node raised {type(exc).__name__}: {exc}"
            return Status.FAILURE
        events = self.context.events
        active = events.active
        changed = False
        moved = self._moved
        statuses = self._statuses
        running = Status.RUNNING
        for index, node in enumerate(self.nodes):
            status = node.status
            if status is not statuses[index]:
                # A node that only started needs no second look until its work wakes us; an
                # ending or reset node may let its parents move on (a Retry re-entering a child).
                changed = changed or status is not running
                if moved is not None:
                    moved.add(index)
                if active:
                    events.emit(
                        "node.status",
                        node=node.name,
                        id=str(node.id),
                        kind=type(node).__name__,
                        old=statuses[index].value,
                        new=status.value,
                    )
                statuses[index] = status
        self._changed = changed
        if active:
            events.emit("tree.tick", tick=self.tick_count, status=self.root.status.value)
        return self.root.status

    def _ended(self, status: Status) -> Status | None:
        """The status the run ends with after a tick that left the root at `status` (ended,
        paused, or out of ticks), or None while it goes on."""
        if status in TERMINAL:
            return status
        journal = self.context.journal
        if journal is not None and journal.ready_to_pause:
            self._paused = True
            return status
        if self.max_ticks is not None and self.tick_count >= self.max_ticks:
            self._error = f"stopped after {self.tick_count} ticks (max_ticks={self.max_ticks})"
            return Status.FAILURE
        return None

    # -- running ---------------------------------------------------------------------------

    async def arun(
        self, inputs: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> RunResult:
        """Tick until the root's first SUCCESS or FAILURE (or `timeout` seconds), then halt.

        `inputs` are written to the state first (validated; a bad input raises before any tick).
        """
        # The tick loop is written out here, not awaited as a coroutine of its own: each frame
        # a waiting run holds is memory and an object for the collector, times every run.
        journal = self._prepare(inputs)
        started = time.monotonic()
        # A run inside the loop that step-by-step ticks use must give that loop back afterwards.
        outer_group, outer_wake = self.context.attachment  # unpacked: no tuple kept meanwhile
        wake = self._wakeup
        wake.open()
        status = Status.FAILURE
        try:
            # A group only for the work off asyncio.
            needs_group = not on_asyncio()
            async with create_task_group() if needs_group else LOOP_TASKS as task_group:
                self.context.attach(task_group, wake)
                # A durable run's lease is renewed from a thread while the run lives.
                lease = journal.keep_lease() if journal is not None else None
                if lease is not None:
                    lease.__enter__()
                try:
                    with NO_DEADLINE if timeout is None else anyio.move_on_after(timeout) as limit:
                        # The cap is for ticks no work asked for: a run whose ticks all follow
                        # its start or finished work never makes a pacer.
                        pacer: TickPacer | None = None
                        asked = True  # the first tick: the run's start asks for it
                        stall = self.stall_interval
                        while True:
                            wake.clear()
                            if not asked:
                                if pacer is None:
                                    pacer = TickPacer(self.max_ticks_per_second)
                                delay = pacer.delay()
                                if delay:
                                    await anyio.sleep(delay)
                            asked = False
                            if self.context.escaped is not None:  # raised below, out of groups
                                break
                            ended = self._ended(self._tick_once())
                            if ended is not None:
                                status = ended
                                break
                            if (self._changed or wake.is_set()) and only_work_can_move(self.nodes):
                                # A started step and its own writes: the next tick waits for it.
                                self._changed = False
                                wake.clear()
                            if self._changed:
                                stall = self.stall_interval
                                await anyio.lowlevel.checkpoint()  # let new work start
                                continue
                            wait = seconds_to_deadline(self._timeouts, self.idle_interval)
                            if self.context.in_flight == 0:
                                # Nothing can wake us (no work in flight): a decorator's own
                                # counter may still be moving (a Repeat over a OneShot), so look
                                # again, sooner after a change, backing off while nothing moves.
                                wait = stall if wait is None else min(wait, stall)
                                stall = min(stall * 2, MAX_STALL_INTERVAL)
                            # Set already: the tick's own writes; set while waiting: work ended.
                            if wake.is_set():
                                continue
                            if journal is not None and journal.must_flush:
                                with contextlib.suppress(RunStopped):  # stopped: woken, raised
                                    journal.flush()
                                if wake.is_set():
                                    continue
                            await wake.wait(wait)
                            if wake.is_set():  # work ended (else a deadline came)
                                asked = True
                                if pacer is not None:
                                    pacer.work_done()
                    if limit.cancelled_caught:
                        self._error = f"the run timed out after {timeout}s"
                        status = Status.FAILURE
                finally:
                    final = self.node_statuses()
                    if journal is not None:
                        journal.closing = True
                    self.halt()  # cancels every task the nodes started
                    try:
                        await self.context.settle()
                    finally:
                        if lease is not None:  # after the work: its last writes need the lease
                            lease.__exit__(None, None, None)
            self._raise_escaped()  # also one raised by work cleaning up after the last tick
        finally:
            self.context.attach(outer_group, outer_wake)
            wake.close()
        return self._result(status, final, started)

    def _prepare(self, inputs: Mapping[str, Any] | None) -> RunJournal | None:
        """Before a run: the inputs written, the last run's outcome cleared, a durable run's
        journal told how to wake and checkpoint this runner. Returns the journal, if any."""
        if inputs:
            self.state.update(inputs)
        self._error = ""
        self._paused = False
        journal = self.context.journal
        if journal is not None:
            self.node_keys  # noqa: B018 - the journal keys each node's entries by them
            journal.closing = False
            journal.on_pause = self._wakeup
            journal.on_stop = self.context.stop
            if journal.checkpoints is None:
                from jianmu_bt.runtime.checkpoints import Checkpointer  # durable runs only

                guard = self.context.guard
                journal.checkpoints = Checkpointer(self, lambda: () if guard is None else (guard,))
        return journal

    def _result(self, status: Status, final: dict[str, Status], started: float) -> RunResult:
        """The RunResult of a run that ended at `status` (`final`: every node's last status),
        announced as `tree.finished`."""
        ok = status == Status.SUCCESS
        result = RunResult(
            status=status,
            state=self.state.get(),
            ticks=self.tick_count,
            reason=self._error or (failure_reason(self.nodes, final) if not ok else ""),
            run_id=self.context.run_id,
            duration=time.monotonic() - started,
            node_statuses=final,
            paused=self._paused,
        )
        journal = self.context.journal
        if result.paused:
            result.reason = journal.pause_reason or "" if journal is not None else ""
        self.events.emit(
            "tree.finished",
            status=status.value,
            ticks=result.ticks,
            reason=result.reason,
            run_status=result.run_status,
        )
        return result

    def run(
        self, inputs: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> RunResult:
        """Blocking form of `arun` (from code that is not already inside an event loop)."""
        work = functools.partial(self.arun, inputs, timeout=timeout)
        if self._background is not None:
            return self._background.portal.call(work)
        return anyio.run(work)

    def tick(self) -> Status:
        """One tick, from synchronous code; async work keeps running between calls.

        With no work in flight the tick runs right here, in the calling thread (no hop to an
        event loop: it costs what a py_trees tick costs); the work it starts goes to a
        background event loop, started on first need, once the tick is over. While work is in
        flight ticks run in that loop, so a tick never races the work. `close()` stops the loop.
        """
        # made on the first step-by-step tick (setdefault: one lock even if two threads race)
        lock = self.__dict__.get("_tick_lock") or self.__dict__.setdefault(
            "_tick_lock", threading.Lock()
        )
        with lock:  # ticks from several threads take turns, as in one loop
            self._raise_escaped()
            if self.context.journal is not None:
                self.node_keys  # noqa: B018 - the journal keys each node's entries by them
            if self.context.in_flight or self._wakeup.is_open:
                return self._background_loop().portal.call(self._tick_once)
            outer = self.context.attachment
            starts = DeferredStarts()
            self.context.attach(starts, outer[1])
            try:
                return self._tick_once()
            finally:
                self.context.attach(*outer)
                if starts:  # the background loop's task group takes the work
                    self._background_loop().start(starts)

    @property
    def has_background_loop(self) -> bool:
        """True while the event loop that `tick()` started is running."""
        return self._background is not None

    def background_loop(self) -> BlockingPortal:
        """The blocking portal of the event loop step-by-step ticks use, started on first use.

        Work that must live in the same loop as the nodes' tasks (opening a provider before the
        first tick, for example) runs there with `background_loop().call(fn)`.
        """
        return self._background_loop().portal

    def _background_loop(self) -> BackgroundLoop:
        if self._background is None:
            self._background = BackgroundLoop(self.context, self.wake, self.halt)
        return self._background

    def halt(self) -> None:
        """Stop every running node (terminate(INVALID)) and cancel all in-flight work."""
        if self.root.status == Status.RUNNING:
            self.root.stop(Status.INVALID)
        self.context.cancel_all()

    def close(self) -> None:
        """Stop the background loop that `tick()` started and stop listening to the state."""
        self.state.unsubscribe(self._wakeup)
        if self._background is not None:
            self._background.close()
            self._background = None

    def __enter__(self) -> TreeRunner:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- inspection ------------------------------------------------------------------------

    def node_statuses(self) -> dict[str, Status]:
        """The status of every node after the last tick, by node id."""
        return {str(node.id): node.status for node in self.nodes}

    def progress(self) -> dict[str, Any]:
        """Where the tree stands (see `tree_progress`): the readable part of a checkpoint."""
        return tree_progress(self.nodes, self.node_keys, self.tick_count)

    def moved_nodes(self) -> set[int] | None:
        """The indexes (in `nodes`) of the nodes whose status changed since the last call, None
        on the first (which starts the tracking: a run without checkpoints does not pay it)."""
        moved, self._moved = self._moved, set()
        return moved

    def checkpoint(self, guards: Iterable[RunGuard] | None = None) -> dict[str, Any]:
        """The run as a whole checkpoint document: state, guards (counters and approvals;
        default the run's `services["guard"]`) and progress."""
        if guards is None:
            guard = self.context.guard
            guards = () if guard is None else (guard,)
        return {
            "guards": [guard.snapshot() for guard in guards],
            "progress": self.progress(),
            "state": self.state.exact_snapshot(),
        }

"""RunContext: what a running tree gives its nodes — state, events, services and a task spawner.

The tree runner creates one RunContext per run and binds every node that has a `bind(context)`
method to it before the first tick. Nodes start their async work through `context.spawn`, which
runs it in the runner's task group and wakes the runner when it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import threading
from asyncio import events
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, cast

import anyio
import anyio.from_thread
import anyio.lowlevel

from jianmu_bt.runtime.events import EventBus
from jianmu_bt.runtime.stopping import RunStopped
from jianmu_bt.runtime.task_groups import DeferredStarts, LoopTasks, start_soon

if TYPE_CHECKING:
    from jianmu_bt.llm import LLMProvider
    from jianmu_bt.runtime.journal import RunJournal
    from jianmu_bt.runtime.services import RunGuard
    from jianmu_bt.runtime.state import StateManager
    from jianmu_bt.runtime.task_groups import LoopTaskGroup, TaskGroup
    from jianmu_bt.tools.runners import ToolRunner


class Work(Protocol):
    """What `RunContext.spawn` runs: an AsyncNode's work, and what its result becomes."""

    def run_async(self) -> Awaitable[Any]:
        """Start the work: the awaitable of its result."""
        ...

    def work_ended(self, result: Any) -> Any:
        """The work's outcome from its result, in the work's task as it ends."""
        ...


class LoopHandle:
    """Runs a callback in the event loop that created the handle, from any thread, without waiting.

    From the loop's own thread the callback runs at once; from another thread it is scheduled
    with `call_soon_threadsafe` (or anyio's portal call on other backends). A loop that has
    already stopped drops the callback.
    """

    __slots__ = ("_loop", "_thread", "_token")

    def __init__(self) -> None:
        self.bind()

    def bind(self) -> None:
        """Run callbacks in the event loop running in this thread (`__init__` binds to it)."""
        self._thread = threading.get_ident()
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio
            self._loop = None
        # anyio's token is needed only off asyncio (one per run: not made when unused)
        self._token = anyio.lowlevel.current_token() if self._loop is None else None

    def call_soon(self, callback: Callable[[], Any]) -> None:
        """Run `callback` in the loop: now when on its thread, soon otherwise."""
        if threading.get_ident() == self._thread:
            callback()
        elif self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody to wake
                self._loop.call_soon_threadsafe(callback)
        else:
            with contextlib.suppress(RuntimeError):
                anyio.from_thread.run_sync(callback, token=self._token)


class TaskHandle:
    """The state of one spawned coroutine: running, finished with a result or error, cancelled."""

    __slots__ = ("cancelled", "done", "error", "result", "scope", "task")

    def __init__(self) -> None:
        # Made when the work starts, in the event loop (a tick may spawn from another thread).
        self.scope: anyio.CancelScope | None = None
        self.done = False
        self.cancelled = False
        self.result: Any = None
        self.error: BaseException | None = None
        #: The asyncio task running the work (None in a task group, off asyncio).
        self.task: asyncio.Task[None] | None = None

    def cancel(self) -> None:
        """Cancel the coroutine (a no-op when it has finished)."""
        if not self.done:
            self.cancelled = True
            if self.scope is not None:  # else the work is cancelled as it starts
                self.scope.cancel()


class NodeTimeoutError(TimeoutError):
    """A node's work exceeded the node's own timeout."""


class RunContext:
    """Per-run services shared by the nodes of one tree.

    `state` is the run's StateManager, `events` its EventBus, `services` a free mapping for
    collaborators (a guard, an LLM provider, a default tool runner) looked up by name. `journal`
    is the RunJournal of a durable run (None otherwise): nodes record their calls in it.
    """

    # Slots: one context per run, thousands of runs at once.
    __slots__ = (
        "_handles",
        "_task_group",
        "_wake",
        "escaped",
        "events",
        "journal",
        "run_id",
        "services",
        "state",
    )

    def __init__(
        self,
        state: StateManager,
        events: EventBus | None = None,
        services: Mapping[str, Any] | None = None,
        run_id: str | None = None,
    ) -> None:
        self.state = state
        self.events = events or EventBus()
        self.services: dict[str, Any] = dict(services or {})
        self.run_id = run_id or new_run_id()
        self.journal: RunJournal | None = None
        #: A BaseException (not an Exception) that ended spawned work: it ends the run, as it
        #: would have ended a task group of the work. `arun` raises it once the work has
        #: ended, `tick()` at the next tick.
        self.escaped: BaseException | None = None
        self._task_group: TaskGroup | None = None
        self._wake: Callable[[], None] = _noop
        # A list, not a set (88 bytes to a set's 216 per run); a run has few handles at once.
        self._handles: list[TaskHandle] = []

    @property
    def guard(self) -> RunGuard | None:
        """The run's guard (`services["guard"]`), or None."""
        guard: RunGuard | None = self.services.get("guard")
        return guard

    @property
    def llm(self) -> LLMProvider | None:
        """The run's LLM provider (`services["llm"]`), or None."""
        provider: LLMProvider | None = self.services.get("llm")
        return provider

    @property
    def tool_runner(self) -> ToolRunner | None:
        """Where the run's tool calls run by default (`services["runner"]`, a sandbox), or None
        for this process."""
        runner: ToolRunner | None = self.services.get("runner")
        return runner

    def service(self, name: str, make: Callable[[], Any]) -> Any:
        """The run's service `name`, made with `make()` on first use (once, also when two
        threads ask at the same time)."""
        found = self.services.get(name)
        if found is None:
            found = self.services.setdefault(name, make())
        return found

    def attach(self, task_group: TaskGroup | None, wake: Callable[[], None]) -> None:
        """Called by the runner: where spawned work runs and how to wake the runner."""
        self._task_group = task_group
        self._wake = wake if task_group is not None else _noop

    @property
    def attachment(self) -> tuple[TaskGroup | None, Callable[[], None]]:
        """The current (task group, wake) pair, to restore after a nested run."""
        return self._task_group, self._wake

    def wake(self) -> None:
        """Ask the runner for a tick soon (something changed)."""
        self._wake()

    def stop(self, error: Exception) -> None:
        """End the run at once with `error` (see RunStopped): no further tick; `arun` halts the
        nodes and raises it. Safe from the run's event loop only."""
        if self.escaped is None:
            self.escaped = RunStopped(error)
        self._wake()

    def spawn(self, work: Work, timeout: float | None = None) -> TaskHandle:
        """Run `work.run_async()` as a task of the run; the handle records how it ended, with
        `work.work_ended(result)` as its result.

        Exceptions are captured in the handle, never raised into a task group, so one failing
        node cannot tear down its siblings. A `timeout` ends the work with NodeTimeoutError.
        On asyncio the work is a task of its own (no task group: `settle` waits for it), on
        other event loops a task of the runner's group.
        """
        group = self._task_group
        if group is None:
            raise RuntimeError(
                "this node runs async work and must be ticked by a TreeRunner "
                "(TreeRunner.run/arun/tick), not by a bare py_trees tick"
            )
        handle = TaskHandle()
        self._handles.append(handle)
        if isinstance(group, DeferredStarts):
            group.defer(self._start, handle, work, timeout)
        else:
            self._start(handle, work, timeout)
        return handle

    def _start(self, handle: TaskHandle, work: Work, timeout: float | None) -> None:
        group = self._task_group
        if group is None:  # deferred, and the loop has ended meanwhile: the run was halted
            return
        loop = events._get_running_loop()
        if loop is not None:
            handle.task = loop.create_task(self._run(handle, work, timeout))
        elif isinstance(group, LoopTasks):
            raise RuntimeError(
                "work must be spawned from the run's event loop thread (a node's tick), "
                "not from a worker thread"
            )
        else:  # not asyncio: the runner's anyio task group
            start_soon(cast("LoopTaskGroup", group), self._run, handle, work, timeout)

    async def _run(self, handle: TaskHandle, work: Work, timeout: float | None) -> None:
        # One cancel scope for both a cancel and the node's timeout (its deadline). Entered and
        # left by hand, as a with-block would: that one keeps the bound `__exit__` for as long
        # as the work runs, an object per task for the collector to walk.
        deadline = math.inf if timeout is None else anyio.current_time() + timeout
        try:
            scope = handle.scope = anyio.CancelScope(deadline=deadline)
            scope.__enter__()
            try:
                if handle.cancelled:
                    scope.cancel()
                try:
                    handle.result = work.work_ended(await work.run_async())
                except Exception as exc:
                    handle.error = exc
                except (anyio.get_cancelled_exc_class(), GeneratorExit):
                    raise
                except BaseException as exc:  # KeyboardInterrupt, SystemExit...: ends the run
                    handle.error = self.escaped = exc
            except BaseException as exc:  # a cancellation: the scope swallows its own
                if not scope.__exit__(type(exc), exc, exc.__traceback__):
                    raise
            else:
                scope.__exit__(None, None, None)
            if scope.cancelled_caught and not handle.cancelled and timeout is not None:
                handle.error = NodeTimeoutError(f"timed out after {timeout}s")
        finally:
            handle.done = True
            handle.task = None  # a finished task is not kept for as long as its node is
            self._handles.remove(handle)
            self._wake()

    async def settle(self) -> None:
        """Wait until every task `spawn` made in this event loop has ended (after
        `cancel_all`: until each has cleaned up). A cancellation of the waiting task waits all
        the same, then propagates: no task of the run outlives it. (A task group waits for the
        others; a task of another loop, as step-by-step ticks start, is that loop's to end.)"""
        loop = events._get_running_loop()
        if loop is None:  # not asyncio: the work ran in the runner's task group
            return
        cancelled: BaseException | None = None
        while pending := [
            task
            for task in (h.task for h in self._handles)
            if task is not None and not task.done() and task.get_loop() is loop
        ]:
            try:
                with anyio.CancelScope(shield=True):  # a cancelled caller still waits here
                    await asyncio.wait(pending)
            except asyncio.CancelledError as exc:  # asyncio's own cancel is not shielded
                cancelled = exc
        if cancelled is not None:
            raise cancelled

    @property
    def in_flight(self) -> int:
        """How many spawned coroutines have not finished yet."""
        return len(self._handles)

    def cancel_all(self) -> None:
        """Cancel every spawned coroutine that is still running."""
        for handle in list(self._handles):
            handle.cancel()


def new_run_id() -> str:
    """A fresh run id: `run_` and 12 hex digits."""
    return f"run_{os.urandom(6).hex()}"


def _noop() -> None:
    return None

"""Tool: the abstract contract every executable capability follows.

A tool author writes `run(input)` (sync or async) and declares a few class attributes. Callers
use one method, `call(...)`: it merges injected values, hands the call to a runner when one is
given, awaits an async `run`, runs a sync `run` in a worker thread or, when it is quick, on the
event loop (`blocking`), applies the timeout and returns a `ToolResult`. `execute(...)` is the
same path returning the raw value (exceptions propagate); `execute_local` is the hook a runner
calls.

A sync `run` abandoned by a timeout or a cancellation keeps running in its thread; until it
returns, the next call of the same tool waits (see `Tool.overruns` and `wait_for_overruns`).
"""

from __future__ import annotations

import functools
import inspect
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from jianmu_bt.tools import event_loop
from jianmu_bt.tools.calls import ToolResult
from jianmu_bt.tools.effects import check_effects
from jianmu_bt.tools.node_factory import set_node_factory, tool_node_factory
from jianmu_bt.tools.overruns import (
    Overrun,
    Overruns,
    has_overruns,
    overrun_of,
    wait_for_overruns,
)
from jianmu_bt.tools.placement import Placement
from jianmu_bt.tools.shapes import (
    DEFAULT_DESCRIPTION,
    DEFAULT_INPUT_SCHEMA,
    DEFAULT_NAME,
    DEFAULT_OUTPUT_SCHEMA,
    Described,
    merge_call_args,
    normalize_parameters,
)

if TYPE_CHECKING:
    from jianmu_bt.tools.runners import ToolRunner

# Callers of this module also find these here (defined in tools.shapes, tools.overruns and
# tools.node_factory).
__all__ = [
    "DEFAULT_OUTPUT_SCHEMA",
    "has_overruns",
    "normalize_parameters",
    "set_node_factory",
    "wait_for_overruns",
]


class Tool(Described, ABC):
    """An executable capability an agent or a tree step can call.

    Subclasses set the class attributes below and implement `run`. Instances may override any
    attribute (for example a configured name) without touching the class.

    | attribute       | default                     | used for                                   |
    |-----------------|-----------------------------|--------------------------------------------|
    | `name`          | "unnamed_tool"              | the name an LLM calls the tool by          |
    | `description`   | "No description provided"   | prompt text (docstring used when default)  |
    | `input_schema`  | a string                    | function-calling parameters                |
    | `output_schema` | a string                    | docs and UIs                               |
    | `parallel_safe` | True                        | whether a batch may run it concurrently    |
    | `effect_tags`   | ()                          | side effects the guard counts and budgets  |
    | `read_only`     | False                       | it only observes: re-run after a crash     |
    | `idempotent`    | False                       | twice = once: re-run after a crash         |

    A tool that is neither read-only nor idempotent is taken to have side effects, declared or
    not (`jianmu_bt.tools.effects`); a read-only tool with a write tag is refused.
    """

    name: str = DEFAULT_NAME
    description: str = DEFAULT_DESCRIPTION
    input_schema: dict[str, Any] = DEFAULT_INPUT_SCHEMA
    output_schema: dict[str, Any] = DEFAULT_OUTPUT_SCHEMA
    parallel_safe: bool = True
    effect_tags: tuple[str, ...] = ()
    #: The tool only observes (reads, searches, computes): a durable run re-runs a call of it
    #: that was in flight at a crash, and the guard counts no `unknown` effect for it. Without
    #: it (or `idempotent`) a tool is taken to have side effects, whether it has effect tags or not.
    read_only: bool = False
    #: Running the same call twice has the effect of running it once (a durable run re-runs an
    #: idempotent call that was in flight at a crash, with the same `idempotency_key`, instead
    #: of holding it as in doubt).
    idempotent: bool = False
    #: Seconds a `call` may take before it is cancelled; None means no limit.
    timeout: float | None = None
    #: Where a sync `run` runs. True: in a worker thread, as it may block (the default of a Tool
    #: subclass). False: on the event loop (quick and pure; it may use the running loop). None
    #: (the default of `@tool`): measured, in a worker thread until its calls have shown they are
    #: quick, then inline, back to a thread once one is slow (`jianmu_bt.tools.placement`).
    blocking: bool | None = True

    #: Whether `run` is a coroutine function (a FunctionTool sets it per instance).
    _run_is_async: bool = False
    _plain_execution: ClassVar[bool] = True
    _routes_execute: ClassVar[bool] = False
    _plain_local: ClassVar[bool] = True
    #: This instance's abandoned calls still running in threads; made on the first one.
    _overruns: Overruns | None = None
    #: Where calls of a `blocking=None` tool run (made on its first call).
    _placement: Placement | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Decided once per class, not on every call.
        cls._run_is_async = inspect.iscoroutinefunction(cls.run)
        # A subclass overriding the public `execute` (to route calls elsewhere) keeps `call` on it.
        cls._routes_execute = _owner(cls, "execute") is not Tool
        # `_blocking_work` stands for a call only while none of the calling methods is
        # overridden, and `execute_local` only together with it (a sandboxed tool never runs here).
        cls._plain_execution = all(
            _owner(cls, name) is Tool for name in ("call", "execute", "_dispatch")
        ) and _owner(cls, "execute_local") is _owner(cls, "_blocking_work")
        cls._plain_local = _owner(cls, "execute_local") is Tool
        if cls.read_only is True and isinstance(cls.effect_tags, (tuple, list)):  # not a property
            check_effects(cls.__dict__.get("name", cls.__qualname__), True, cls.effect_tags)

    @classmethod
    def missing_requirement(cls) -> str | None:
        """Why this tool cannot work here as built by default (an optional package that is not
        installed), or None. `jianmu tools` reports it; the tool itself still fails clearly."""
        return None

    @abstractmethod
    def run(self, input: Any) -> Any:
        """Do the work. Sync or async; the only method a tool author has to write."""

    # -- calling ---------------------------------------------------------------------------

    async def call(
        self,
        args: Any = None,
        *,
        injected: Mapping[str, Any] | None = None,
        runner: ToolRunner | None = None,
        prefer_injected: bool = True,
        timeout: float | None = None,
    ) -> ToolResult:
        """Run the tool: always a ToolResult, never an exception for a tool fault.

        Injected values are merged into dict arguments (they win unless `prefer_injected=False`);
        the call goes to `runner.run` when a runner is given, else runs here (an async `run` is
        awaited, a sync `run` goes to a worker thread or the loop, as `blocking` says). An
        exception becomes an error naming its type; exceeding `timeout` (or the tool's own)
        cancels the call (on the loop: drops its late result) and says so; cancellation of the
        caller propagates. While an abandoned earlier call still runs in its thread
        (`overruns`), this call first waits for it, within its own timeout ("... is still
        running a timed-out earlier call; not started" when the time runs out meanwhile).
        """
        limit = self.timeout if timeout is None else timeout
        waiting = False
        try:
            if limit is None:  # no cancel scope to enter and leave (about a third of a call)
                raw = await self._start(args, injected, runner, prefer_injected, direct=True)
            elif runner is None and self._runs_inline and not self.overruns:
                # On the loop nothing can be cancelled: the deadline is checked when the call
                # returns, and a late result is dropped as the thread path drops one.
                start = time.monotonic()
                try:
                    raw = await self._start(args, injected, runner, prefer_injected)
                except Exception as exc:
                    late = time.monotonic() - start > limit
                    return self._timed_out(limit) if late else self._error_result(exc)
                if time.monotonic() - start > limit:
                    return self._timed_out(limit)
            else:  # anyio.fail_after, without its three look-ups of the backend (µs a call)
                import anyio  # here: loading a tree file runs no loop (see `event_loop`)

                deadline = _now() + limit
                with anyio.CancelScope(deadline=deadline) as scope:
                    overruns = self._overruns
                    if overruns is not None and overruns.count:
                        waiting = True
                        await overruns.wait()
                        waiting = False
                    raw = await self._start(args, injected, runner, prefer_injected)
                if scope.cancelled_caught and _now() >= deadline:
                    raise TimeoutError
        except TimeoutError as exc:
            if limit is None:  # the tool's own, not a limit of this call
                return self._error_result(exc)
            if waiting:
                return ToolResult.failure(
                    self.name,
                    f"Error: tool '{self.name}' is still running a timed-out earlier call; "
                    "not started",
                )
            return self._timed_out(limit)
        except Exception as exc:  # a tool fault is an observation, not a crash
            return self._error_result(exc)
        except BaseException as exc:  # a cancelled direct call files its overrun (see `_start`)
            self.record_overrun(overrun_of(exc))
            raise
        return self._to_result(raw)

    async def execute(
        self,
        args: Any = None,
        injected: Mapping[str, Any] | None = None,
        runner: ToolRunner | None = None,
        prefer_injected: bool = True,
    ) -> Any:
        """The raw form of `call`: the tool's raw return value; exceptions from `run` propagate.

        The same path as `call` (merging, runner, worker thread, waiting for overruns) without
        the timeout and without the ToolResult normalisation.
        """
        return await self._dispatch(self._merge_args(args, injected, prefer_injected), runner)

    async def execute_local(self, args: Any) -> Any:
        """The runner hook (`RunnableTool` in jianmu_bt.tools.runners), not for callers: run here
        with merged arguments (validation, then await an async `run`, or a sync `run` in a worker
        thread or on the loop, as `blocking` says)."""
        prepared = self._prepare_input(args)
        if isinstance(prepared, ToolResult):
            return prepared
        work = self._bind(prepared)
        if self._run_is_async:
            return await work()
        blocking = self.blocking
        if blocking is None:
            placement = self._placement or self._new_placement()
            loop = event_loop.get_running_loop() if placement.inline else None  # None on trio
            if loop is not None:
                return placement.run_inline(work, loop)
            work = placement.in_thread(work)
        elif not blocking:
            return work()
        # A timeout or halt abandons the thread, which ends on its own (a sandbox can kill).
        from jianmu_bt.tools.blocking import run_blocking  # here: see `event_loop`

        return await run_blocking(work)

    # -- the private path behind `call` and `execute` --------------------------------------

    def _start(
        self,
        args: Any,
        injected: Mapping[str, Any] | None,
        runner: ToolRunner | None,
        prefer_injected: bool,
        direct: bool = False,
    ) -> Awaitable[Any]:
        """What `call` awaits: `execute` when a subclass reroutes it, else `_dispatch` of the
        merged arguments directly (a plain function: one coroutine frame less per call; a
        merge error raises where `call` awaits, inside its handling).

        `direct` (a call with no cancel scope of its own, whose caller files the overrun a
        cancellation carries): an async tool run here, with no overrun to wait for, is its
        `run` coroutine itself, without `_dispatch`'s frame.
        """
        if self._routes_execute:
            return self.execute(args, injected, runner, prefer_injected)
        merged = self._merge_args(args, injected, prefer_injected)
        overruns = self._overruns
        if (
            direct
            and runner is None
            and self._run_is_async
            and self._plain_execution
            and self._plain_local
            and (overruns is None or not overruns.count)
        ):
            prepared = self._prepare_input(merged)
            if isinstance(prepared, ToolResult):
                return _ready(prepared)
            work: Awaitable[Any] = self._bind(prepared)()
            return work
        return self._dispatch(merged, runner)

    async def _dispatch(self, merged: Any, runner: ToolRunner | None) -> Any:
        """Wait for overruns, hand the call to `runner` or run it here; a call abandoned while
        its thread runs is recorded. Overridden by tools whose calls go elsewhere."""
        overruns = self._overruns
        if overruns is not None and overruns.count:
            await overruns.wait()
        try:
            if runner is not None:
                return await runner.run(self, merged)
            if self._run_is_async and self._plain_local:
                # `execute_local`'s async case inline: one coroutine frame less per call
                prepared = self._prepare_input(merged)
                if isinstance(prepared, ToolResult):
                    return prepared
                return await self._bind(prepared)()
            return await self.execute_local(merged)
        except BaseException as exc:  # zero cost unless raised; re-raised as it is
            self.record_overrun(overrun_of(exc))
            raise

    def _merge_args(
        self, args: Any, injected: Mapping[str, Any] | None, prefer_injected: bool
    ) -> Any:
        """Combine the caller's arguments with injected values (see `merge_call_args`)."""
        return merge_call_args(args, injected, prefer_injected)

    def _prepare_input(self, args: Any) -> Any:
        """Shape the arguments into what `run` takes, or return a ToolResult error.

        A tool with a non-object input schema is advertised as `{"input": ...}`; such a wrapped
        value is unwrapped here so `run` receives the bare input.
        """
        if self.input_schema.get("type") == "object":
            if not isinstance(args, Mapping):
                return ToolResult.failure(
                    self.name,
                    f"Error: tool '{self.name}' expects a JSON object of arguments, "
                    f"got {type(args).__name__}: {str(args)[:200]!r}",
                )
            return args
        if isinstance(args, Mapping) and "input" in args:
            return args["input"]
        return args

    def _bind(self, prepared: Any) -> Callable[[], Any]:
        """The call of `run` with prepared input, ready to run (a FunctionTool binds its fn)."""
        return functools.partial(self.run, prepared)

    # The batch path of ToolExecutor (jianmu_bt.nodes): blocking calls handed to threads at once.

    @property
    def _runs_in_a_thread(self) -> bool:
        """True when a call with no runner runs `run` in a worker thread of this process now (a
        sync tool that may block), as `_blocking_work` describes exactly."""
        if not self._plain_execution or self._run_is_async or self.blocking is False:
            return False
        return self.blocking is True or not self._runs_inline

    @property
    def _runs_inline(self) -> bool:
        """True when a call with no runner runs a sync `run` on the running event loop's thread
        now: `blocking=False`, or `blocking=None` and its calls have shown they are quick."""
        if self.blocking is None and self._runs_inline_on_asyncio:
            return event_loop.get_running_loop() is not None  # not on trio
        return self._runs_inline_on_asyncio

    @property
    def _runs_inline_on_asyncio(self) -> bool:
        """`_runs_inline` for a caller that knows it runs on asyncio (asyncio's own check of the
        running loop costs a system call)."""
        if not self._plain_execution or self._run_is_async:
            return False
        if self.blocking is None:
            placement = self._placement
            return placement is not None and placement.inline
        return not self.blocking

    def _blocking_work(self, args: Any = None) -> Callable[[], Any] | ToolResult:
        """What a call would run in a worker thread, validated and bound, or the ToolResult
        error for arguments that do not fit. Only for tools that `_runs_in_a_thread`; each
        outcome is then normalised with `_to_result` / `_error_result`."""
        prepared = self._prepare_input(self._merge_args(args, None, True))
        if isinstance(prepared, ToolResult):
            return prepared
        work = self._bind(prepared)
        if self.blocking is None:  # timed in its thread (see `placement`)
            return (self._placement or self._new_placement()).in_thread(work)
        return work

    def _new_placement(self) -> Placement:  # setdefault: one even if two threads get here
        placement: Placement = self.__dict__.setdefault("_placement", Placement())
        return placement

    def _to_result(self, raw: Any) -> ToolResult:
        """A raw return value of this tool as a ToolResult (see `ToolResult.from_raw`)."""
        return ToolResult.from_raw(self.name, raw)

    def _error_result(self, exc: Exception) -> ToolResult:
        """An exception raised by this tool as the failed ToolResult an LLM reads."""
        return ToolResult.failure(self.name, f"Error: {type(exc).__name__}: {exc}")

    def _timed_out(self, limit: float) -> ToolResult:
        """The failed ToolResult of a call that took longer than `limit` seconds."""
        return ToolResult.failure(self.name, f"Error: tool '{self.name}' timed out after {limit}s")

    # -- abandoned calls still running ------------------------------------------------------

    @property
    def overruns(self) -> int:
        """Threads of this process still running calls of this tool that a timeout or a
        cancellation abandoned. The next call starts only when this is 0."""
        record = self._overruns
        return record.count if record is not None else 0

    async def wait_for_overruns(self) -> None:
        """Return once no abandoned call of this tool still runs in a thread (cancellable)."""
        record = self._overruns
        if record is not None and record.count:
            await record.wait()

    def record_overrun(self, overrun: Overrun | None) -> None:
        """File a call of this tool that was abandoned while its thread runs (from
        `BlockingPool.abandon` or `overrun_of`), so the next call waits for it. None, or an
        overrun that has ended, changes nothing."""
        if overrun is None or overrun.ended:
            return
        record = self._overruns
        if record is None:  # setdefault: one record even if two threads get here at once
            record = self.__dict__.setdefault("_overruns", Overruns())
        record.add(overrun)

    def as_node(
        self,
        name: str | None = None,
        input_key: str | None = None,
        output_key: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """Wrap this tool as a ToolNode, an explicit step of a behaviour tree.

        The tree layer is loaded on first use (`jianmu_bt.tools.node_factory`)."""
        factory = tool_node_factory()
        return factory(self, name=name, input_key=input_key, output_key=output_key, **kwargs)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def _now() -> float:
    """The event loop's clock, as `anyio.current_time()` reads it (cheaper on asyncio)."""
    loop = event_loop.get_running_loop()
    if loop is not None:
        return loop.time()
    import anyio  # here: see `event_loop`

    return anyio.current_time()


def _owner(cls: type, name: str) -> type:
    """The class in `cls`'s MRO that defines attribute `name`."""
    return next(klass for klass in cls.__mro__ if name in klass.__dict__)


async def _ready(value: Any) -> Any:
    """An awaitable of a value already known (an argument error found before the call)."""
    return value

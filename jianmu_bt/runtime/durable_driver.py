"""DurableDriver: run, resume and fork a tree, durably when given a run store.

One driver for every kind of tree: a YAML tree (`jianmu_bt.loader.Tree`) and a tree built in
Python (`PythonTree`) both are one. A subclass gives the tree's parts (`name`, `path`, `digest`,
`state`, `runner`, `guards`: see `DurableTree`), calls `_keep_initial()` once built (every run
starts from the state and guards it had then), and may override `_check_open` and
`_check_inputs`.
"""

from __future__ import annotations

import copy
import functools
import inspect
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import anyio

from jianmu_bt.runtime.context import new_run_id
from jianmu_bt.runtime.decisions import Decisions
from jianmu_bt.runtime.durable import DurableRun, as_store
from jianmu_bt.runtime.results import RunResult
from jianmu_bt.runtime.runner import TreeRunner
from jianmu_bt.runtime.state import StateManager
from jianmu_bt.store import RunRecord, RunStore
from jianmu_bt.tools import Tool

__all__ = ["DurableDriver", "blocking", "forked_record"]

P = ParamSpec("P")
D = TypeVar("D", bound="DurableDriver")


def forked_record(source: RunRecord, run_id: str | None = None) -> RunRecord:
    """The record of a new paused run forked from the run `source` (its tree, file and inputs),
    for `RunStore.fork` (`fork`, the viewer's "fork from here")."""
    now = time.time()
    return RunRecord(
        run_id=run_id or new_run_id(),
        **{k: getattr(source, k) for k in ("tree", "tree_path", "tree_digest", "inputs")},
        status="paused",
        started=now,
        updated=now,
    )


def blocking(
    method: Callable[Concatenate[D, P], Awaitable[RunResult]],
) -> Callable[Concatenate[D, P], RunResult]:
    """The blocking twin of an async driver method (`arun` -> `run`): the same arguments, run in
    the tree's tick loop when `tick()` started one, else in a new event loop."""

    def run_blocking(self: D, /, *args: P.args, **kwargs: P.kwargs) -> RunResult:
        work = functools.partial(method, self, *args, **kwargs)
        if self.runner.has_background_loop:
            result: RunResult = self.runner.background_loop().call(work)
            return result
        return anyio.run(work)

    functools.update_wrapper(run_blocking, method)
    name = method.__name__.removeprefix("a")
    owner = method.__qualname__.rpartition(".")[0] or "DurableDriver"
    run_blocking.__name__, run_blocking.__qualname__ = name, f"{owner}.{name}"
    own = inspect.cleandoc(method.__doc__ or "")
    run_blocking.__doc__ = (
        f"Blocking form of `{method.__name__}` (for code outside an event loop).\n\n{own}"
    )
    return run_blocking


class DurableDriver:
    """Runs of one tree: `run`/`arun`, and with a run store `resume`/`aresume` and `fork`."""

    name: str
    path: Path | None
    digest: str
    state: StateManager
    runner: TreeRunner

    @property
    def guards(self) -> list[Any]:
        """Every guard of the tree (checkpointed with a durable run)."""
        raise NotImplementedError

    def tool_named(self, name: str) -> Tool | None:
        """The tool of that name the tree calls (edited approvals are checked against it)."""
        raise NotImplementedError

    @property
    def run_source(self) -> str:
        """Where a later process finds this tree again, recorded with each run (`jianmu
        resume` loads it from there): the tree file's absolute path, "" when there is none."""
        return str(self.path.resolve()) if self.path is not None else ""

    def _check_open(self) -> None:
        """Raise when the tree can no longer run (it was closed)."""

    def _keep_initial(self) -> None:
        """Remember the state and guards every run starts from (called once, when built)."""
        self._initial_state = copy.deepcopy(self.state.exact_snapshot())
        self._initial_guards = [guard.snapshot() for guard in self.guards]
        self._runs = 0

    def _fresh(self, run_id: str | None) -> None:
        """Make ready for a new run with this id (a fresh one when None): every run after the
        first starts from the initial state and guards."""
        if self._runs:
            self.state.restore(copy.deepcopy(self._initial_state))
            for guard, initial in zip(self.guards, self._initial_guards, strict=True):
                # Counters and per-call decisions belong to the run that made them; standing
                # grants (given before this run) carry over.
                fresh = copy.deepcopy(initial)
                fresh["approvals"]["grants"] = guard.snapshot()["approvals"]["grants"]
                guard.restore(fresh)
        self._runs += 1
        self.runner.context.run_id = run_id or new_run_id()

    def _check_inputs(self, inputs: Mapping[str, Any] | None) -> None:
        """Raise when `inputs` lack what the tree needs."""

    async def arun(
        self,
        inputs: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        store: RunStore | str | Path | None = None,
        run_id: str | None = None,
        hold: str = "wait",
    ) -> RunResult:
        """Run to the root's first SUCCESS or FAILURE (or `timeout` seconds).

        Every run is a new run with its own id (`run_id`, or a fresh one), starting from the
        tree's initial state plus `inputs` (values set on `tree.state` before the first run
        count as inputs). With a `store` (a RunStore, an SQLite file path or a PostgreSQL URL)
        the run is durable: recorded there, resumable with `resume` after a pause or a crash.
        `hold` is what a call held for approval does: "wait" in this process, or "pause" the
        run (the result's `run_status` is then "paused"). A run whose store fails stops at once
        with StoreFaultError (docs/durability.md, "Faults").
        """
        return await self._drive(self._begin(inputs, store, run_id, hold), timeout)

    run = blocking(arun)

    async def aresume(
        self,
        run_id: str,
        *,
        store: RunStore | str | Path,
        approve: Iterable[str] = (),
        deny: Iterable[str] = (),
        hold: str = "wait",
        timeout: float | None = None,
        edits: Mapping[str, Mapping[str, Any]] | None = None,
        by: str = "api",
        responses: Mapping[str, str] | None = None,
        answers: Mapping[str, Any] | None = None,
        results: Mapping[str, Any] | None = None,
    ) -> RunResult:
        """Continue a durable run in this process from its journal.

        Steps that finished are not run again (their results come from the journal). `approve`
        and `deny` decide calls that wait (call ids, or "all" to approve every one): an approved
        held call runs, an approved call in doubt runs again, a denied held call is `denied` and a
        denied call in doubt `skipped` (the node sees a failed result). `edits` approves held
        calls with other arguments (call id -> arguments: they must fit the tool's schema, and
        the guard checks the edited call when the run reaches it); `responses` answers held
        calls in their place (call id -> the reply the node reads as the call's result; the
        call does not run); `answers` answers questions the run waits on (question id ->
        value) and `results` gives external calls their results (call id -> value), each
        checked against its schema; `by` names who decided.
        Raises DurableRunError for a finished run, a changed tree, a run another process holds,
        a call both approved and denied, or an edit that does not fit.
        """
        decisions = Decisions.of(approve, deny, edits, by, responses, answers, results)
        return await self._drive(self._resume(run_id, store, decisions, hold), timeout)

    resume = blocking(aresume)

    def fork(
        self,
        run_id: str,
        checkpoint: int,
        *,
        store: RunStore | str | Path,
        new_run_id: str | None = None,
        hold: str = "wait",
        timeout: float | None = None,
    ) -> RunResult:
        """Time travel: a new run that continues `run_id` from an earlier checkpoint of its
        history (`store.history(run_id)`): the steps up to that checkpoint are taken from the
        journal, everything after it runs anew."""
        runs = as_store(store, create=False)
        new = forked_record(runs.get_run(run_id), new_run_id)
        runs.fork(run_id, checkpoint, new)
        return self.resume(new.run_id, store=runs, hold=hold, timeout=timeout)

    def _begin(
        self,
        inputs: Mapping[str, Any] | None,
        store: RunStore | str | Path | None,
        run_id: str | None,
        hold: str,
    ) -> DurableRun | None:
        """Start a new run: fresh state and guard, inputs written, a durable record if asked."""
        self._check_open()
        self._fresh(run_id)
        self._check_inputs(inputs)
        if inputs:
            self.state.update(inputs)
        if store is None:
            return None
        durable = DurableRun(self, as_store(store), self.runner.context.run_id, hold)
        durable.start(self.state.exact_snapshot())
        return durable

    def _resume(
        self,
        run_id: str,
        store: RunStore | str | Path,
        decisions: Decisions,
        hold: str,
    ) -> DurableRun:
        self._check_open()
        self._fresh(run_id)
        durable = DurableRun(self, as_store(store, create=False), run_id, hold)
        durable.resume(decisions)
        return durable

    async def _drive(self, durable: DurableRun | None, timeout: float | None) -> RunResult:
        """Run the tree; a durable run records how it ended, or lets its lease go when the run
        raised (it stays resumable)."""
        try:
            result = await self.runner.arun(None, timeout=timeout)
        except BaseException:
            if durable is not None:
                durable.abandon()
            raise
        return result if durable is None else durable.finish(result)

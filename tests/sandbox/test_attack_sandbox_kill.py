"""Killing a LocalSandbox worker never blocks the event loop.

A timeout, a cancellation, the end of a cold call and `aclose()` all kill a worker and wait for
its processes to go. None of that may stall the loop the caller runs in: the tests make
`time.sleep` raise for the whole flow, and check that another task of the same loop keeps
running while a kill is under way. No wall-clock time is asserted.
"""

from __future__ import annotations

import os
import time

import anyio
import pytest
import sandbox_test_tools as tools
from sandbox_helpers import assert_nothing_left

from jianmu_bt.sandbox import LocalSandbox, SandboxLimits, local as local_module
from jianmu_bt.sandbox.process import WorkerProcess
from jianmu_bt.tools.builtin.python_repl import PythonREPLTool

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["cgroup", "session"])
def clean_up_by(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways a worker's processes are found: its cgroup, or (without one) its session."""
    if request.param == "session":

        def no_cgroup(*args: object, **kwargs: object) -> tuple[None, str]:
            return None, "switched off for this test"

        monkeypatch.setattr(local_module.CgroupSet, "create", no_cgroup)
    return request.param


@pytest.fixture
def no_blocking_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    """`time.sleep` raises: a kill path that pauses the event loop with it fails the test."""

    def blocking_sleep(seconds: float) -> None:
        raise AssertionError(f"time.sleep({seconds}) would block the event loop")

    monkeypatch.setattr(time, "sleep", blocking_sleep)


async def test_timeouts_cancellations_and_aclose_never_sleep_in_the_loop(
    clean_up_by: str, no_blocking_sleep: None
) -> None:
    async with LocalSandbox(SandboxLimits(timeout=1), warm=True) as warm:
        stopped = await tools.sleep_forever.call({}, runner=warm)  # trusted, in the worker
        assert not stopped.ok and "timeout limit exceeded" in stopped.error
        spun = await PythonREPLTool(runner=warm).call({"code": "while True: pass"})
        assert not spun.ok and "timeout limit exceeded" in spun.error
        with anyio.move_on_after(0.3):  # the caller gives up: the worker is killed
            await tools.sleep_forever.call({}, runner=warm)
        added = await tools.add.call({"a": 1, "b": 2}, runner=warm)
        assert added.ok and added.output == 3
        left = await tools.spawn_sleeper.call({}, runner=warm)  # swept after the call
        assert left.ok
    await assert_nothing_left(warm)
    async with LocalSandbox(SandboxLimits(timeout=1)) as cold:
        added = await tools.add.call({"a": 2, "b": 2}, runner=cold)  # killed after the call
        assert added.ok and added.output == 4
        stopped = await tools.sleep_forever.call({}, runner=cold)
        assert not stopped.ok and "timeout limit exceeded" in stopped.error
    await assert_nothing_left(cold)


async def test_another_task_runs_while_a_worker_is_being_killed(
    clean_up_by: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The worker is reported as still exiting until the ticker has run a few times during the
    # kill; a kill that held the loop would never see that happen (and give up after many polls).
    state = {"killing": False, "ticks": 0, "polls": 0}
    real_wait4 = os.wait4

    def slow_wait4(pid: int, options: int) -> tuple[int, int, object]:
        if options & os.WNOHANG and state["killing"] and state["ticks"] < 3:
            state["polls"] += 1
            if state["polls"] > 10_000:
                raise AssertionError("the kill never let another task run")
            return 0, 0, None
        return real_wait4(pid, options)

    real_akill = WorkerProcess.akill

    async def watched_akill(self: WorkerProcess) -> None:
        state["killing"] = True
        try:
            await real_akill(self)
        finally:
            state["killing"] = False

    async def ticker() -> None:
        while True:
            await anyio.sleep(0)
            if state["killing"]:
                state["ticks"] += 1

    monkeypatch.setattr(os, "wait4", slow_wait4)
    monkeypatch.setattr(WorkerProcess, "akill", watched_akill)
    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        async with LocalSandbox(SandboxLimits(timeout=20)) as sandbox:
            added = await tools.add.call({"a": 2, "b": 3}, runner=sandbox)  # a cold call
        group.cancel_scope.cancel()
    assert added.ok and added.output == 5
    assert state["ticks"] >= 3
    await assert_nothing_left(sandbox)

"""Abandoned sync calls whose thread still runs: the next call of the tool waits for that thread.

Real threads, coordinated with threading.Event; no assertion depends on how long anything takes.
"""

from __future__ import annotations

import asyncio
import threading
import time

import anyio
import pytest

from jianmu_bt import ToolSet, tool
from jianmu_bt.tools.base import has_overruns, wait_for_overruns
from jianmu_bt.tools.blocking import _run_in_anyio_thread, run_blocking
from jianmu_bt.tools.overruns import Overrun, Overruns, overrun_of

WAIT = 10.0  # generous upper bound for things that should happen at once
SHORT = 0.05  # the timeout a first call is meant to exceed


def pool_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "jianmu-blocking"}


class Recorder:
    """Start and end of every run, in order, and the most runs seen at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.order: list[tuple[str, str]] = []
        self.running = 0
        self.peak = 0

    def enter(self, tag: str) -> None:
        with self.lock:
            self.order.append(("start", tag))
            self.running += 1
            self.peak = max(self.peak, self.running)

    def leave(self, tag: str) -> None:
        with self.lock:
            self.order.append(("end", tag))
            self.running -= 1

    def started(self, tag: str) -> bool:
        with self.lock:
            return ("start", tag) in self.order


def blocking_tool(recorder: Recorder, release: threading.Event, **options):
    """A sync tool whose call tagged "first" blocks until `release` is set."""

    @tool(**options)
    def work(tag: str) -> str:
        """Records its run; "first" blocks until released."""
        recorder.enter(tag)
        try:
            if tag == "first":
                release.wait(WAIT)
        finally:
            recorder.leave(tag)
        return tag

    return work


def held(recorder: Recorder, release: threading.Event):
    """A plain function that records its run and blocks until `release` is set."""

    def body() -> str:
        recorder.enter("first")
        release.wait(WAIT)
        recorder.leave("first")
        return "done"

    return body


def waiting(found) -> int:
    """Calls of `found` waiting for its overruns (0 where there is no such record)."""
    record = getattr(found, "_overruns", None)
    return record.waiting if record is not None else 0


async def until(predicate, what: str) -> None:
    with anyio.fail_after(WAIT):
        while not predicate():
            await anyio.sleep(0.001)
    assert predicate(), what


def no_thread_left(scenario) -> None:
    """Run `scenario` in its own loop; afterwards no worker thread of that loop is alive."""
    before = pool_threads()
    asyncio.run(scenario())
    assert pool_threads() <= before


async def timed_out_first(work, release: threading.Event) -> None:
    result = await work.call({"tag": "first"}, timeout=SHORT)
    assert not result.ok and "timed out" in result.error
    assert work.overruns == 1 and has_overruns([work])


def test_the_next_call_starts_only_when_the_timed_out_thread_has_ended():
    recorder, release = Recorder(), threading.Event()
    work = blocking_tool(recorder, release)

    async def scenario() -> None:
        await timed_out_first(work, release)
        second = asyncio.ensure_future(work.call({"tag": "second"}))
        # Either it waits (as it should) or it has started (as it did before).
        await until(lambda: waiting(work) or recorder.started("second"), "second call went on")
        assert not recorder.started("second")
        release.set()
        result = await second
        assert result.ok and result.output == "second"
        assert work.overruns == 0 and not has_overruns([work])

    no_thread_left(scenario)
    assert recorder.order == [
        ("start", "first"),
        ("end", "first"),
        ("start", "second"),
        ("end", "second"),
    ]
    assert recorder.peak == 1


def test_a_call_whose_own_timeout_expires_while_waiting_never_starts():
    recorder, release = Recorder(), threading.Event()
    work = blocking_tool(recorder, release)

    async def scenario() -> None:
        await timed_out_first(work, release)
        result = await work.call({"tag": "second"}, timeout=SHORT)
        assert not result.ok
        assert result.error == (
            "Error: tool 'work' is still running a timed-out earlier call; not started"
        )
        assert not recorder.started("second") and waiting(work) == 0
        release.set()
        await wait_for_overruns([work])
        assert (await work.call({"tag": "third"}, timeout=WAIT)).output == "third"

    no_thread_left(scenario)
    assert recorder.order == [
        ("start", "first"),
        ("end", "first"),
        ("start", "third"),
        ("end", "third"),
    ]


def test_the_tools_own_timeout_and_toolset_execute_wait_too():
    recorder, release = Recorder(), threading.Event()
    work = blocking_tool(recorder, release, timeout=SHORT)
    tools = ToolSet.from_tools([work])

    async def scenario() -> None:
        assert "timed out" in (await tools.call("work", {"tag": "first"})).error
        assert work.overruns == 1
        second = asyncio.ensure_future(tools.execute("work", {"tag": "second"}))
        await until(lambda: waiting(work) or recorder.started("second"), "second call went on")
        assert not recorder.started("second")
        release.set()
        assert await second == "second"

    no_thread_left(scenario)
    assert recorder.peak == 1
    assert recorder.order.index(("end", "first")) < recorder.order.index(("start", "second"))


def test_a_cancelled_call_is_recorded_like_a_timed_out_one():
    recorder, release = Recorder(), threading.Event()
    work = blocking_tool(recorder, release)

    async def scenario() -> None:
        with anyio.move_on_after(SHORT) as scope:  # a halt, not the tool's timeout
            await work.execute({"tag": "first"})
        assert scope.cancelled_caught and work.overruns == 1
        waiter = asyncio.ensure_future(wait_for_overruns([work]))
        await until(lambda: waiting(work) == 1, "wait_for_overruns waits")
        assert not waiter.done()
        release.set()
        await waiter
        assert work.overruns == 0 and recorder.order[-1] == ("end", "first")

    no_thread_left(scenario)


def test_cancelling_a_call_that_waits_for_an_overrun_propagates_and_leaves_nothing_behind():
    recorder, release = Recorder(), threading.Event()
    work = blocking_tool(recorder, release)

    async def scenario() -> None:
        await timed_out_first(work, release)
        second = asyncio.ensure_future(work.call({"tag": "second"}))
        await until(lambda: waiting(work) or recorder.started("second"), "second call went on")
        second.cancel()
        with pytest.raises(asyncio.CancelledError):
            await second
        assert waiting(work) == 0 and work.overruns == 1  # the first thread still runs
        with anyio.move_on_after(SHORT) as scope:
            await wait_for_overruns([work])
        assert scope.cancelled_caught and waiting(work) == 0
        release.set()
        await wait_for_overruns([work])
        assert work.overruns == 0

    no_thread_left(scenario)
    assert not recorder.started("second")
    assert recorder.order == [("start", "first"), ("end", "first")]


def test_async_and_non_blocking_tools_are_unaffected():
    hold = anyio.Event()  # never set: the call only ends by its timeout

    @tool
    async def stuck(tag: str) -> str:
        """Waits forever."""
        await hold.wait()
        return tag

    @tool(blocking=False)
    def inline(tag: str) -> str:
        """Runs on the event loop."""
        return tag.upper()

    async def scenario() -> None:
        result = await stuck.call({"tag": "a"}, timeout=SHORT)
        assert "timed out" in result.error
        assert stuck.overruns == 0 and stuck._overruns is None  # cancelled for real: no thread
        hold.set()
        assert (await stuck.call({"tag": "b"}, timeout=WAIT)).output == "b"
        assert (await inline.call({"tag": "c"}, timeout=WAIT)).output == "C"
        assert inline.overruns == 0 and inline._overruns is None
        assert not has_overruns([stuck, inline])
        await wait_for_overruns([stuck, inline])  # returns at once

    no_thread_left(scenario)


def test_a_finished_call_leaves_no_record():
    @tool
    def quick(tag: str) -> str:
        """Returns at once."""
        return tag

    async def scenario() -> None:
        for i in range(20):
            assert (await quick.call({"tag": str(i)}, timeout=WAIT)).ok
        assert quick._overruns is None

    no_thread_left(scenario)


def test_overruns_record_wakes_every_waiter_when_the_last_thread_ends():
    first, second = Overrun(), Overrun()
    record = Overruns()
    assert record.add(first) and record.add(second)
    assert not record.add(first)  # filed once
    ended = Overrun()
    ended._end()
    assert not record.add(ended) and record.count == 2

    async def scenario() -> None:
        waiters = [asyncio.ensure_future(record.wait()) for _ in range(3)]
        await until(lambda: record.waiting == 3, "three waiters")
        threading.Thread(target=first._end).start()
        await until(lambda: record.count == 1, "one ended")
        await asyncio.sleep(0)
        assert not any(w.done() for w in waiters)
        threading.Thread(target=second._end).start()
        await asyncio.gather(*waiters)
        assert record.count == 0 and record.waiting == 0

    asyncio.run(scenario())


def test_the_anyio_thread_path_reports_its_overrun_too():
    """The path used on backends other than asyncio (exercised here on asyncio)."""
    recorder, release = Recorder(), threading.Event()
    body = held(recorder, release)

    async def scenario() -> None:
        assert await _run_in_anyio_thread(lambda x: x * 2, (21,)) == 42
        caught: list[BaseException] = []
        with anyio.move_on_after(SHORT):
            try:
                await _run_in_anyio_thread(body, ())
            except BaseException as exc:
                caught.append(exc)
                raise
        (exc,) = caught
        overrun = overrun_of(exc)
        assert isinstance(overrun, Overrun) and not overrun.ended
        assert overrun_of(exc) is None  # taken off: filed once
        record = Overruns()
        assert record.add(overrun)
        release.set()
        await record.wait()
        assert overrun.ended and recorder.order[-1] == ("end", "first")

    asyncio.run(scenario())


def test_a_call_abandoned_before_it_starts_leaves_no_overrun():
    """The pool's abandon: a queued call never starts and is nothing to wait for."""
    from jianmu_bt.tools.blocking import BlockingPool

    async def scenario() -> None:
        pool = BlockingPool(asyncio.get_running_loop(), max_workers=1)
        started, release = threading.Event(), threading.Event()
        ran: list[str] = []

        def hold() -> None:
            started.set()
            release.wait(WAIT)

        busy = pool.submit(hold)
        await anyio.to_thread.run_sync(started.wait, WAIT)
        queued = pool.submit(ran.append, "queued")
        assert pool.abandon(queued) is None and queued.cancelled()
        overrun = pool.abandon(busy)
        assert overrun is not None and not overrun.ended
        assert pool.abandon(busy) is overrun
        record = Overruns()
        record.add(overrun)
        release.set()
        await record.wait()
        assert overrun.ended and ran == []
        assert await pool.run(ran.append, "later") is None and ran == ["later"]
        pool.close()
        deadline = time.monotonic() + WAIT
        while pool.workers and time.monotonic() < deadline:
            await anyio.sleep(0.001)
        assert pool.workers == 0

    asyncio.run(scenario())


def test_an_async_tool_whose_own_thread_is_abandoned_files_the_overrun() -> None:
    # An async tool called without a timeout runs as its own coroutine (no `_dispatch` frame):
    # `call` files the overrun its cancelled thread left, as `_dispatch` would have.
    recorder, release = Recorder(), threading.Event()
    body = held(recorder, release)

    @tool
    async def offload() -> str:
        """Hands its work to a thread."""
        return await run_blocking(body)

    async def scenario() -> None:
        with anyio.move_on_after(SHORT) as scope:  # a halt of the caller
            await offload.call({})
        assert scope.cancelled_caught and offload.overruns == 1
        release.set()
        await wait_for_overruns([offload])
        assert offload.overruns == 0 and recorder.order[-1] == ("end", "first")

    no_thread_left(scenario)

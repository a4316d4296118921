"""What a durable run writes when: a call that may have a side effect is committed before it
starts and as soon as it ends; a call that may run again writes no `running` row and its outcome
is group-committed (with the next write, or within GROUP_SECONDS while the run waits); a store
that fails such a delayed write stops the run."""

from __future__ import annotations

import threading
import time

import anyio
import py_trees
import pytest
from faulty_store import FaultyStore

from jianmu_bt import AgentState, PythonTree, StateManager, ToolNode, tool
from jianmu_bt.guard import GuardEnforcer
from jianmu_bt.runtime import StoreFaultError, journal
from jianmu_bt.store import JournalEntry, RunNotFoundError, RunStore, open_store

pytestmark = pytest.mark.parametrize("store_location", ["sqlite", "postgres"], indirect=True)

WAIT_LIMIT = 30.0  # seconds a test waits for something that should come at once


class Seen(AgentState):
    """What the steps saw of their own run's journal."""

    seen: str | None = None


def _rows(store: RunStore, run_id: str) -> list[str]:
    """The run's journal rows as `node:status` (none before the run is recorded)."""
    try:
        return [f"{e.key.split('#')[0]}:{e.status}" for e in store.journal_log(run_id)]
    except RunNotFoundError:
        return []


def _sequence(name: str, *nodes: py_trees.behaviour.Behaviour) -> PythonTree:
    def build() -> py_trees.behaviour.Behaviour:
        return py_trees.composites.Sequence("Main", memory=True, children=list(nodes))

    return PythonTree(name, build, StateManager(Seen))


def test_a_side_effect_is_committed_before_it_starts_and_as_soon_as_it_ends(store_location):
    with open_store(store_location) as watcher:

        @tool
        def pay() -> str:
            """Declares nothing: taken as side-effecting."""
            return ",".join(_rows(watcher, "R"))

        @tool(read_only=True)
        def look() -> str:
            """Reads the run's journal as another process would."""
            return ",".join(_rows(watcher, "R"))

        tree = _sequence(
            "effects",
            ToolNode(pay, "Pay", output_key="seen"),
            ToolNode(look, "Look", output_key="seen"),
        )
        with open_store(store_location) as store, tree:
            result = tree.run(store=store, run_id="R")
            assert result.ok, result.reason
            # While it ran, `pay` found its own `running` row; `look` found pay's outcome.
            assert result.state["seen"] == "0/0:running,0/0:done"
            assert _rows(store, "R") == ["0/0:running", "0/0:done", "0/1:done"]


def test_a_read_only_outcome_waits_for_the_next_write_but_not_past_the_group_time(
    store_location,
):
    release = threading.Event()
    with open_store(store_location) as watcher:

        @tool(read_only=True)
        def first() -> str:
            """Quick."""
            return "ok"

        @tool(read_only=True)
        async def slow() -> str:
            """Waits until the test has seen `first`'s outcome in the store."""
            await anyio.to_thread.run_sync(release.wait, WAIT_LIMIT)
            return "ok"

        def first_recorded() -> None:
            # Another connection polls while the run waits on `slow` (which wrote no row).
            deadline = time.monotonic() + WAIT_LIMIT
            while _rows(watcher, "R") != ["0/0:done"] and time.monotonic() < deadline:
                time.sleep(0.01)
            seen.append(_rows(watcher, "R"))
            release.set()

        seen: list[list[str]] = []
        tree = _sequence("late", ToolNode(first, "First"), ToolNode(slow, "Slow"))
        with open_store(store_location) as store, tree:
            poller = threading.Thread(target=first_recorded)
            poller.start()
            try:
                result = tree.run(store=store, run_id="R")
            finally:
                release.set()
                poller.join(WAIT_LIMIT)
            assert seen == [["0/0:done"]]  # written while the run waited
            assert result.ok, result.reason
            assert _rows(store, "R") == ["0/0:done", "0/1:done"]


def test_outcomes_of_quick_read_only_steps_are_written_in_groups(store_location):
    @tool(read_only=True)
    def step(n: int) -> int:
        """Quick."""
        return n

    steps = 200
    tree = _sequence("quick", *(ToolNode(step, f"S{i}", arguments={"n": i}) for i in range(steps)))
    with open_store(store_location) as store, tree:
        assert tree.run(store=store, run_id="R").ok
        assert [e.status for e in store.journal_log("R")] == ["done"] * steps
        checkpoints = len(store.history("R"))
    # One write per group (GROUP_ENTRIES outcomes, or fewer once GROUP_SECONDS passed): far
    # fewer than one per step, even on a slow machine.
    assert steps // journal.GROUP_ENTRIES <= checkpoints < steps // 4


def test_a_store_that_fails_a_group_write_stops_the_run(store_location, monkeypatch):
    monkeypatch.setenv("JIANMU_STORE_PATIENCE", "0")  # down for good: stop at the first failure
    started = threading.Event()

    @tool(read_only=True)
    def first() -> str:
        """Quick."""
        return "ok"

    @tool(read_only=True)
    async def waits() -> str:
        """Waits long enough for the group's timer to write `first`'s outcome."""
        started.set()
        await anyio.sleep(WAIT_LIMIT)
        return "too late"

    tree = _sequence("fails", ToolNode(first, "First"), ToolNode(waits, "Waits"))
    with open_store(store_location) as inner, tree:
        store = FaultyStore(inner)
        store.fail_appends(1)  # every write after the run's start: the store is down
        with pytest.raises(StoreFaultError, match="failed to record a step"):
            tree.run(store=store, run_id="R", timeout=WAIT_LIMIT)
        assert started.is_set()
        assert _rows(inner, "R") == []  # nothing was recorded, and `waits` was cut off


def test_outcomes_wait_for_the_runner_off_asyncio(store_location):
    with open_store(store_location) as store:
        store.create_run(_record("R"), checkpoint={"state": {}}, owner="me")
        run = journal.RunJournal(store, "R", "me", patience=0)
        run.record_outcome(_entry("a"))  # no event loop here: no timer
        assert run.must_flush
        assert _rows(store, "R") == []
        run.flush()
        assert not run.must_flush
        assert _rows(store, "R") == ["a:done"]


def _record(run_id: str):
    from jianmu_bt.store import RunRecord

    return RunRecord(run_id=run_id, tree="t", status="running", started=1.0, updated=1.0)


def _entry(key: str) -> JournalEntry:
    return JournalEntry(
        key=f"{key}#1", call_id=key, kind="tool", node=key, tool="t", arguments={},
        digest="d", status="done", result=None,
    )  # fmt: skip


def test_outcomes_written_when_a_run_is_cancelled_keep_the_guards_counters(store_location):
    searched: list[int] = []
    blocked = threading.Event()

    @tool(read_only=True, effect_tags=["http"])
    def search(n: int) -> int:
        """Counted against the run's http budget."""
        searched.append(n)
        return n

    @tool(read_only=True)
    async def gate() -> str:
        """Waits until the test lets it go."""
        if not blocked.is_set():
            blocked.set()
            await anyio.sleep_forever()
        return "ok"

    def build() -> py_trees.behaviour.Behaviour:
        steps = [ToolNode(search, f"S{n}", arguments={"n": n}) for n in (1, 2)]
        steps += [ToolNode(gate, "Gate"), ToolNode(search, "S3", arguments={"n": 3})]
        return py_trees.composites.Sequence("Main", memory=True, children=steps)

    def tree() -> PythonTree:
        guard = GuardEnforcer.from_config({"budgets": {"http": 2}})
        return PythonTree("budget", build, StateManager(Seen), guard=guard)

    async def cancelled_at_the_gate(first: PythonTree) -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: first.arun(store=store_location, run_id="R"))
            while not blocked.is_set():
                await anyio.sleep(0.01)
            group.cancel_scope.cancel()  # as Ctrl-C would: the two outcomes still wait

    with tree() as first:
        anyio.run(cancelled_at_the_gate, first)
    with tree() as again:
        result = again.resume("R", store=store_location)
    # The two searches came from the journal, and their http effects from the checkpoint
    # written with them: the third search is over the budget.
    assert searched == [1, 2] and not result.ok and "budget" in result.reason

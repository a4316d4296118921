"""Fault injection: a run store that fails at every write of a run, on SQLite and PostgreSQL.

A failed write is never a step's outcome: the run stops at once (StoreFaultError; no further step,
no other branch: the Selector below never falls back because of it), and a resume with the store
back finishes the run with every side effect done at most once and no finished call run again.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from faulty_store import FaultyStore

from jianmu_bt import tool
from jianmu_bt.loader import load_tree
from jianmu_bt.runtime.journal import StoreFaultError
from jianmu_bt.store import open_store

CALLS: list[str] = []


@tool(effect_tags=["ledger"])
def act(name: str) -> str:
    """A side effect the test counts."""
    CALLS.append(name)
    return f"did {name}"


TREE = """
version: 1
name: faults
root:
  sequence:
    name: Main
    children:
      - tool: {name: First, tool: act, arguments: {name: first}}
      - selector:
          name: PayOrFallback
          children:
            - tool: {name: Pay, tool: act, arguments: {name: pay}}
            - tool: {name: Fallback, tool: act, arguments: {name: fallback}}
      - tool: {name: Last, tool: act, arguments: {name: last}}
"""
EVERY_CALL = ["first", "pay", "last"]


@pytest.fixture(autouse=True)
def _reset_calls():
    CALLS.clear()


def _tree():
    return load_tree(TREE, tools=[act])


def _writes_of_a_clean_run(location: str) -> int:
    store = FaultyStore(open_store(location))
    with store, _tree() as tree:
        assert tree.run(store=store, run_id="clean").ok
    CALLS.clear()
    return store.appends


def _finish(location: str, run_id: str) -> None:
    """Resume until the run ends, deciding each call in doubt as a person who checked the
    ledger would: run it again when it did not happen, skip it when it did (the node then sees
    a failed call: the run may end `failed`, or the Selector fall back)."""
    with open_store(location, create=False) as store:
        for _ in range(5):
            waiting = [e for e in store.journal(run_id) if e.status == "in_doubt"]
            approve = [e.call_id for e in waiting if e.arguments["name"] not in CALLS]
            deny = [e.call_id for e in waiting if e.arguments["name"] in CALLS]
            with _tree() as tree:
                result = tree.resume(run_id, store=store, approve=approve, deny=deny, hold="pause")
            if not result.paused:
                assert store.get_run(run_id).status == result.run_status
                assert result.ok or "skipped" in result.reason, result.reason
                return
    raise AssertionError(f"run {run_id} did not finish")


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_store_down_from_any_write_stops_the_run_and_a_resume_finishes_it(
    store_location, when, monkeypatch
):
    monkeypatch.setenv("JIANMU_STORE_PATIENCE", "0")  # down for good: stop at the first failure
    total = _writes_of_a_clean_run(store_location)
    assert total >= 7  # the run's record and lease, two rows a call, its end
    for n in range(1, total + 1):
        CALLS.clear()
        run_id = f"R{n}{when}"
        store = FaultyStore(open_store(store_location))
        store.fail_appends(n, when=when)
        if (n, when) == (total, "after"):  # the run's end was recorded before the cut
            with store, _tree() as tree:
                assert tree.run(store=store, run_id=run_id).ok and CALLS == EVERY_CALL
            continue
        with store, _tree() as tree, pytest.raises(StoreFaultError, match=run_id) as raised:
            tree.run(store=store, run_id=run_id)
        assert "failed to record" in str(raised.value) and "\n" not in str(raised.value)
        assert not [t for t in threading.enumerate() if t.name.startswith("jianmu-lease")]
        before = list(CALLS)
        assert "fallback" not in before, (n, before)  # the Selector did not move on
        assert before == EVERY_CALL[: len(before)], (n, before)  # nothing after the fault
        _finish(store_location, run_id)
        counts = Counter(CALLS)
        assert all(count == 1 for count in counts.values()), (n, when, CALLS)
        assert set(before) <= set(counts), (n, CALLS)


def test_a_store_that_comes_back_within_the_patience_costs_nothing(store_location, monkeypatch):
    monkeypatch.setenv("JIANMU_STORE_PATIENCE", "10")
    total = _writes_of_a_clean_run(store_location)
    for n in range(1, total + 1):
        for when in ("before", "after"):
            CALLS.clear()
            store = FaultyStore(open_store(store_location))
            store.fail_appends(n, when=when, times=3)
            with store, _tree() as tree:
                result = tree.run(store=store, run_id=f"T{n}{when}")
            assert result.ok and CALLS == EVERY_CALL, (n, when, result.reason, CALLS)
            # Three failures waited out (one for the run's last write when its first try
            # committed: the retry finds the end recorded and stops there).
            assert store.failed == (1 if (n, when) == (total, "after") else 3), (n, when)


def test_a_store_fault_in_the_cli_is_one_line_and_exit_75(tmp_path):
    from jianmu_bt.cli.errors import CLIError
    from jianmu_bt.cli.stores import EXIT_STORE_FAULT, store_errors

    with pytest.raises(CLIError) as raised, store_errors():
        raise StoreFaultError("run R stopped: its run store failed to record a step: gone")
    assert raised.value.exit_code == EXIT_STORE_FAULT == 75

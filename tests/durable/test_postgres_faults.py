"""Real PostgreSQL faults in the middle of a durable run's call: its connection terminated by the
server (`pg_terminate_backend`), the server going down and coming back, or staying down.

A fault the run can wait out costs nothing (the store reconnects and the run goes on); one that
lasts longer than the run's patience stops the run at once (StoreFaultError, no other branch
taken), and a resume once the server is back finishes it without repeating a side effect.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import psycopg
import pytest
from postgres_server import PostgresUnavailable, create_database, skip_or_fail, start_postgres

from jianmu_bt import tool
from jianmu_bt.loader import load_tree
from jianmu_bt.runtime.journal import StoreFaultError
from jianmu_bt.store import PostgresStore

CALLS: list[str] = []
FAULT: dict[str, object] = {}

TREE = """
version: 1
name: pg_faults
root:
  sequence:
    name: Main
    children:
      - tool: {name: First, tool: act, arguments: {name: first}}
      - selector:
          name: PayOrFallback
          children:
            - tool: {name: Pay, tool: pay, arguments: {name: pay}}
            - tool: {name: Fallback, tool: act, arguments: {name: fallback}}
      - tool: {name: Last, tool: act, arguments: {name: last}}
"""


@tool(effect_tags=["ledger"])
def act(name: str) -> str:
    """A side effect the test counts."""
    CALLS.append(name)
    return f"did {name}"


@tool(effect_tags=["payment"])
def pay(name: str) -> str:
    """A side effect during which the test's fault strikes the store."""
    CALLS.append(name)
    strike = FAULT.pop("strike", None)
    if callable(strike):
        strike()
    return f"paid {name}"


@pytest.fixture(scope="module")
def server():
    """A PostgreSQL server of this module's own (the tests stop and restart it)."""
    try:
        dsn, stop = start_postgres()
    except PostgresUnavailable as exc:
        skip_or_fail(str(exc))
    try:
        yield dsn, stop
    finally:
        stop()


@pytest.fixture(autouse=True)
def _reset():
    CALLS.clear()
    FAULT.clear()


def _tree():
    return load_tree(TREE, tools=[act, pay])


def _terminate_run_connections(server_dsn: str) -> None:
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        killed = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = 'jianmu-bt' AND pid <> pg_backend_pid()"
        ).fetchall()
    assert killed, "no run store connection to terminate"


def test_a_terminated_connection_is_reopened_and_the_run_goes_on(server, monkeypatch):
    dsn, _ = server
    monkeypatch.setenv("JIANMU_STORE_PATIENCE", "10")
    location = create_database(dsn)
    FAULT["strike"] = lambda: _terminate_run_connections(dsn)
    with PostgresStore(location) as store, _tree() as tree:
        result = tree.run(store=store, run_id="T")
        assert result.ok, result.reason
        assert CALLS == ["first", "pay", "last"]
        assert [e.status for e in store.journal("T")] == ["done", "done", "done"]
        assert store.get_run("T").status == "succeeded"


def test_a_server_restarted_mid_call_is_waited_for(server, monkeypatch):
    dsn, stop = server
    monkeypatch.setenv("JIANMU_STORE_PATIENCE", "30")
    location = create_database(dsn)
    back = threading.Event()

    def crash_and_come_back() -> None:
        stop.halt()

        def later() -> None:
            time.sleep(1.0)
            stop.restart()
            back.set()

        threading.Thread(target=later, daemon=True).start()

    FAULT["strike"] = crash_and_come_back
    with PostgresStore(location) as store, _tree() as tree:
        result = tree.run(store=store, run_id="W")
        assert back.is_set()
        assert result.ok, result.reason
        assert CALLS == ["first", "pay", "last"]
        assert store.get_run("W").status == "succeeded"


def test_a_server_down_longer_than_the_patience_stops_the_run_and_resume_finishes(
    server, monkeypatch
):
    dsn, stop = server
    monkeypatch.setenv("JIANMU_STORE_PATIENCE", "0.5")
    monkeypatch.setenv("JIANMU_HEARTBEAT", "0.5")
    location = create_database(dsn)
    FAULT["strike"] = stop.halt
    try:
        with _tree() as tree, pytest.raises(StoreFaultError, match="failed to record") as raised:
            tree.run(store=PostgresStore(location), run_id="D")
        assert "\n" not in str(raised.value)
    finally:
        stop.restart()
    assert CALLS == ["first", "pay"]  # stopped at once: no fallback, nothing after
    with PostgresStore(location) as store:
        deadline = time.monotonic() + 30  # the dead process's lease runs out (two heartbeats)
        while store.get_run("D").lease_expires and time.monotonic() < deadline:
            run = store.get_run("D")
            if run.lease_expires is None or run.lease_expires < time.time():
                break
            time.sleep(0.1)
        with _tree() as tree:
            paused = tree.resume("D", store=store, hold="pause")
        assert paused.paused  # the payment's outcome was lost: in doubt, not paid again
        (doubt,) = [e for e in store.journal("D") if e.status == "in_doubt"]
        assert doubt.tool == "pay"
        with _tree() as tree:  # it was paid: the reviewer skips it
            final = tree.resume("D", store=store, deny=[doubt.call_id])
        assert final.run_status == store.get_run("D").status
    counts = Counter(CALLS)
    assert counts["pay"] == 1 and counts["first"] == 1

"""Conformance: creating, reading, listing and deleting runs, closing stores."""

import time

import pytest
from store_helpers import entry, make_run

from jianmu_bt.store import (
    CheckpointNotFoundError,
    LeaseError,
    PostgresStore,
    RunExistsError,
    RunNotFoundError,
    SQLiteStore,
    StoreError,
)


def test_create_and_get_round_trip_every_field(store):
    run = make_run(
        "r-all",
        started=1000.25,
        tree_path="trees/demo.yaml",
        tree_digest="abc123",
        inputs={"query": "建木 ☃", "n": 3, "nested": {"b": [1, 2.5, None, True]}, "a": 1},
        reason="because",
        parent_run="r-0",
        parent_checkpoint=4,
        status="paused",
    )
    stored = store.create_run(run)
    assert stored == run
    got = store.get_run("r-all")
    assert got == run
    assert list(got.inputs) == ["query", "n", "nested", "a"]  # key order is kept


def test_create_with_checkpoint_writes_checkpoint_one_at_position_zero(store):
    store.create_run(make_run("r1"), checkpoint={"state": {"x": 1}})
    (cp,) = store.history("r1")
    assert (cp.run_id, cp.seq, cp.position, cp.data) == ("r1", 1, 0, {"state": {"x": 1}})
    assert cp.created > 0
    assert store.latest_checkpoint("r1") == cp == store.checkpoint("r1", 1)


def test_create_without_checkpoint_has_no_history(store):
    store.create_run(make_run("r1"))
    assert store.history("r1") == []
    assert store.latest_checkpoint("r1") is None
    with pytest.raises(CheckpointNotFoundError, match="has no checkpoints"):
        store.checkpoint("r1", 1)


def test_create_with_owner_takes_the_lease(store):
    before = time.time()
    stored = store.create_run(make_run("r1"), owner="worker-a", lease_seconds=60)
    assert stored.lease_owner == "worker-a"
    assert stored.lease_expires is not None and stored.lease_expires > before
    assert store.get_run("r1").lease_owner == "worker-a"
    assert store.get_run("r1").lease_expires == stored.lease_expires
    with pytest.raises(LeaseError, match="worker-a"):
        store.acquire_lease("r1", "worker-b")


def test_create_existing_id_raises_and_changes_nothing(store):
    store.create_run(make_run("r1", tree_path="first"), checkpoint={"v": 1})
    with pytest.raises(RunExistsError, match=r"run 'r1' already exists") as caught:
        store.create_run(make_run("r1", tree_path="second"), checkpoint={"v": 2}, owner="x")
    assert store.location in str(caught.value)
    assert caught.value.run_id == "r1"
    assert store.get_run("r1").tree_path == "first"
    assert store.get_run("r1").lease_owner is None
    assert [cp.data for cp in store.history("r1")] == [{"v": 1}]


def test_create_rejects_unknown_status(store):
    with pytest.raises(ValueError, match="unknown run status 'sleeping'"):
        store.create_run(make_run("r1", status="sleeping"))
    assert store.runs() == []


def test_get_missing_run_lists_five_recent_ids(store):
    with pytest.raises(RunNotFoundError, match="the store has no runs"):
        store.get_run("nope")
    for i in range(7):
        store.create_run(make_run(f"r{i}", started=1000.0 + i))
    with pytest.raises(RunNotFoundError) as caught:
        store.get_run("nope")
    message = str(caught.value)
    assert "'nope'" in message and store.location in message
    assert "recent runs: r6, r5, r4, r3, r2)" in message
    assert "r1" not in message.split("recent runs:")[1]
    assert caught.value.run_id == "nope"
    assert "\n" not in message


def test_runs_newest_started_first_with_limit(store):
    assert store.runs() == []
    for i, started in enumerate([30.0, 10.0, 20.0]):
        store.create_run(make_run(f"r{i}", started=started))
    assert [r.run_id for r in store.runs()] == ["r0", "r2", "r1"]
    assert [r.run_id for r in store.runs(limit=2)] == ["r0", "r2"]
    assert store.runs(limit=0) == []


def test_delete_run_removes_journal_and_checkpoints(store):
    store.create_run(make_run("r1"), checkpoint={"v": 1})
    store.create_run(make_run("r2"), checkpoint={"v": 2})
    store.append("r1", None, [entry("a"), entry("a", "done")], {"v": 3})
    store.append("r2", None, [entry("b")])
    store.delete_run("r1")
    with pytest.raises(RunNotFoundError):
        store.get_run("r1")
    with pytest.raises(RunNotFoundError):
        store.journal("r1")
    with pytest.raises(RunNotFoundError):
        store.history("r1")
    with pytest.raises(RunNotFoundError):
        store.delete_run("r1")
    assert [e.key for e in store.journal_log("r2")] == ["b"]
    # The id can be used again, starting from an empty journal.
    store.create_run(make_run("r1"))
    assert store.journal_log("r1") == []
    assert store.append("r1", None, [entry("c")]) == 1


def test_location_names_the_store(store, location):
    if isinstance(store, SQLiteStore):
        assert store.location.endswith("runs.db")
        assert store.location.startswith("/")
    else:
        assert isinstance(store, PostgresStore)
        database = location.rsplit("/", 1)[1]
        assert store.location.startswith("PostgreSQL at 127.0.0.1:")
        assert store.location.endswith("/" + database)


def test_two_connections_see_each_others_writes(connect):
    first, second = connect(), connect()
    first.create_run(make_run("r1"), checkpoint={"v": 1})
    assert second.get_run("r1").run_id == "r1"
    second.append("r1", None, [entry("a")], status="paused")
    assert first.get_run("r1").status == "paused"
    assert [e.key for e in first.journal("r1")] == ["a"]


def test_close_is_idempotent_and_later_calls_fail(connect):
    store = connect()
    store.create_run(make_run("r1"))
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.get_run("r1")
    with connect() as again:
        assert again.get_run("r1").run_id == "r1"
    with pytest.raises(StoreError, match="closed"):
        again.runs()

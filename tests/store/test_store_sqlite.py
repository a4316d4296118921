"""SQLite files: creation, refusing files it cannot use (unchanged), locks, durability."""

import hashlib
import sqlite3
import subprocess
import sys
import threading

import pytest
from store_helpers import entry, make_run

from jianmu_bt.store import (
    DEFAULT_STORE_PATH,
    SQLiteStore,
    StoreCorruptError,
    StoreError,
    StoreFormatError,
    StoreLockedError,
    StoreNotFoundError,
    open_store,
)
from jianmu_bt.store.sqlite import SQLITE_SCHEMA


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_creates_parent_folders_and_uses_wal(tmp_path):
    path = tmp_path / "a" / "b" / "runs.db"
    with SQLiteStore(path) as store:
        store.create_run(make_run("r1"))
        assert store.path == path
        assert store.location == str(path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone() == ("2",)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"runs", "journal", "checkpoints", "meta"} <= tables
    conn.close()


def test_open_store_picks_sqlite_for_paths(tmp_path):
    with open_store(tmp_path / "x.db") as store:
        assert isinstance(store, SQLiteStore)
    with open_store(str(tmp_path / "y.db")) as store:
        assert isinstance(store, SQLiteStore)
    assert str(DEFAULT_STORE_PATH) == ".jianmu/runs.db"


def test_data_survives_reopening(tmp_path):
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        store.create_run(make_run("r1"), checkpoint={"v": 1})
        store.append("r1", None, [entry("a")], {"v": 2}, status="paused")
    with SQLiteStore(path, create=False) as store:
        assert store.get_run("r1").status == "paused"
        assert [cp.data for cp in store.history("r1")] == [{"v": 1}, {"v": 2}]


def test_committed_writes_survive_a_killed_process(tmp_path):
    path = tmp_path / "runs.db"
    script = (
        "import os, sys, time\n"
        "from jianmu_bt.store import SQLiteStore, RunRecord\n"
        "s = SQLiteStore(sys.argv[1])\n"
        "s.create_run(RunRecord('r1', 'demo', 'running', time.time(), time.time()), {'v': 1})\n"
        "s.append('r1', None, checkpoint={'v': 2}, status='paused')\n"
        "os._exit(9)\n"  # no close, no cleanup
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, timeout=60
    )
    assert done.returncode == 9, done.stderr
    with SQLiteStore(path, create=False) as store:
        assert store.get_run("r1").status == "paused"
        assert store.latest_checkpoint("r1").data == {"v": 2}


def test_missing_file_with_create_false(tmp_path):
    path = tmp_path / "nowhere" / "runs.db"
    with pytest.raises(StoreNotFoundError, match=r"runs\.db does not exist"):
        SQLiteStore(path, create=False)
    with pytest.raises(StoreNotFoundError):
        open_store(path, create=False)
    assert not path.parent.exists()


@pytest.mark.parametrize(
    "content",
    [b"\x8f\x01random bytes\x00" * 300, b"runs: []\nthis is a text file\n" * 20],
    ids=["random-bytes", "text"],
)
def test_file_that_is_not_a_database_is_refused_unchanged(tmp_path, content):
    path = tmp_path / "runs.db"
    path.write_bytes(content)
    with pytest.raises(StoreCorruptError, match="is not a usable database") as caught:
        SQLiteStore(path)
    assert str(path) in str(caught.value)
    assert path.read_bytes() == content
    assert not (tmp_path / "runs.db-wal").exists()


def test_other_sqlite_database_is_refused_unchanged(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (text TEXT)")
    conn.commit()
    conn.close()
    before = digest(path)
    with pytest.raises(StoreCorruptError, match=r"not a jianmu run store.*notes"):
        SQLiteStore(path)
    assert digest(path) == before


def test_missing_tables_are_refused(tmp_path):
    path = tmp_path / "runs.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE journal")
    conn.commit()
    conn.execute("PRAGMA journal_mode = DELETE")  # opening must not switch it back to WAL
    conn.close()
    before = digest(path)
    with pytest.raises(StoreCorruptError, match="missing tables: journal"):
        SQLiteStore(path)
    assert digest(path) == before


def test_newer_format_is_refused_unchanged(tmp_path):
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as store:
        store.create_run(make_run("r1"))
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'format_version'")
    conn.commit()
    conn.execute("PRAGMA journal_mode = DELETE")  # opening must not switch it back to WAL
    conn.close()
    before = digest(path)
    with pytest.raises(StoreFormatError, match="store format 3; this program reads format 2") as e:
        SQLiteStore(path)
    assert (e.value.found, e.value.supported) == (3, 2)
    assert digest(path) == before


def test_empty_database_with_create_false_is_refused(tmp_path):
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    with pytest.raises(StoreCorruptError, match="empty database"):
        SQLiteStore(path, create=False)
    with SQLiteStore(path) as store:  # create=True makes it a store
        store.create_run(make_run("r1"))


def test_a_folder_is_not_a_store(tmp_path):
    with pytest.raises(StoreError, match=r"is a folder; give the path of a file"):
        SQLiteStore(tmp_path)


def test_locked_database_raises_store_locked_error(tmp_path):
    path = tmp_path / "runs.db"
    store = SQLiteStore(path, busy_timeout=0.1)
    store.create_run(make_run("r1"))
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(
            StoreLockedError, match=r"locked by another connection \(waited 0.1 s\)"
        ):
            store.append("r1", None, [entry("a")])
        with pytest.raises(StoreLockedError):
            store.create_run(make_run("r2"))
        with pytest.raises(StoreLockedError):
            store.acquire_lease("r1", "a")
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert store.append("r1", None, [entry("a")]) == 1  # usable again, nothing half-written
    assert [r.run_id for r in store.runs()] == ["r1"]
    store.close()


def test_locked_rollback_journal_database_at_open(tmp_path):
    path = tmp_path / "plain.db"
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("CREATE TABLE t (x)")
    other.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreLockedError, match="locked"):
            SQLiteStore(path, busy_timeout=0.1)
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_synchronous_setting(tmp_path):
    with pytest.raises(ValueError, match="synchronous must be one of"):
        SQLiteStore(tmp_path / "a.db", synchronous="sometimes")
    with SQLiteStore(tmp_path / "b.db", synchronous="full") as store:
        assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 2
    with SQLiteStore(tmp_path / "c.db") as store:
        assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 1


def test_stores_in_two_threads_on_one_file(tmp_path):
    path = tmp_path / "runs.db"
    with SQLiteStore(path) as first:
        first.create_run(make_run("r1"))
    errors: list[BaseException] = []

    def work(name: str) -> None:
        try:
            with SQLiteStore(path) as mine:
                for i in range(30):
                    mine.append("r1", None, [entry(f"{name}-{i}")])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in ("x", "y", "z")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    with SQLiteStore(path) as store:
        assert [e.position for e in store.journal_log("r1")] == list(range(1, 91))


def test_jianmu_store_names_the_default_store(monkeypatch, tmp_path):
    from jianmu_bt.store import default_store

    monkeypatch.delenv("JIANMU_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert default_store() == tmp_path / ".jianmu" / "runs.db"
    monkeypatch.setenv("JIANMU_STORE", "postgresql://db/runs")
    assert default_store() == "postgresql://db/runs"


def test_a_format_1_store_is_upgraded_in_place_keeping_its_runs(tmp_path):
    path = tmp_path / "runs.db"
    old_schema = SQLITE_SCHEMA.replace(" lease_token INTEGER NOT NULL DEFAULT 0,", "").replace(
        " delta INTEGER NOT NULL DEFAULT 0,", ""
    )
    assert old_schema.count("DEFAULT 0,") == SQLITE_SCHEMA.count("DEFAULT 0,") - 2
    conn = sqlite3.connect(path)
    conn.executescript(old_schema)
    conn.execute("INSERT INTO meta (key, value) VALUES ('format_version', '1')")
    conn.execute(
        "INSERT INTO runs (run_id, tree, status, started, updated, last_seq) "
        "VALUES ('old', 't', 'paused', 1, 2, 1)"
    )
    conn.execute("INSERT INTO checkpoints VALUES ('old', 1, 1, 0, '{\"v\": 1}')")
    conn.commit()
    conn.close()
    with SQLiteStore(path) as store:
        run = store.get_run("old")
        assert (run.status, run.lease_token) == ("paused", 0)
        assert store.acquire_lease("old", "a", 60).lease_token == 1
        assert store.checkpoint("old", 1).data == {"v": 1}
        store.append("old", "a", [], {"set": {"": {"w": 2}}}, delta=True)
        assert store.latest_checkpoint("old").data == {"v": 1, "w": 2}
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone() == ("2",)
    conn.close()

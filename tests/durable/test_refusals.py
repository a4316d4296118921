"""A run that cannot be resumed, or a store that cannot be used: one line, exit 1, and the store
is left as it was. Two processes resuming one run: one wins."""

from __future__ import annotations

import os
import shutil
import sqlite3

import pytest
from durable_helpers import APPROVALS, TREES, cli_env, jianmu, show, start, wait_for

from jianmu_bt.store import SQLiteStore


def _one_line_error(result, *words, code=1):
    assert result.returncode == code, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jianmu: error: "), result.stderr
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in lines[0], lines[0]


@pytest.fixture(scope="module")
def paused_store(tmp_path_factory):
    """A store holding run R of the approvals tree, paused at its first held call; made once."""
    folder = tmp_path_factory.mktemp("paused")
    _paused_run(folder, cli_env(folder / "ledger"), folder / "runs.db")
    return folder / "runs.db"


def _copy_store(source, db):
    """Copy the SQLite store `source` (with any -wal/-shm file) to `db`."""
    for file in source.parent.glob(source.name + "*"):
        shutil.copy(file, db.with_name(db.name + file.name[len(source.name) :]))


def _paused_run(tmp_path, env, store):
    result = jianmu(
        "run",
        APPROVALS,
        "--store",
        store,
        "--run-id",
        "R",
        "--approve",
        "later",
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 3, result.stderr


def _dump(db):
    with sqlite3.connect(db) as connection:
        return [
            list(connection.execute(f"SELECT * FROM {table} ORDER BY 1, 2"))
            for table in ("runs", "journal", "checkpoints")
        ]


def test_resuming_a_finished_run_is_refused(tmp_path):
    env, db = cli_env(tmp_path / "ledger"), tmp_path / "runs.db"
    assert (
        jianmu(
            "run", TREES / "pipeline.yaml", "--store", db, "--run-id", "R", env=env, cwd=tmp_path
        ).returncode
        == 0
    )
    before = _dump(db)
    _one_line_error(
        jianmu("resume", "R", "--store", db, env=env, cwd=tmp_path), "R", "already succeeded"
    )
    assert _dump(db) == before


def test_an_unknown_run_id_is_refused_with_the_known_ones(tmp_path, paused_store):
    env, db = cli_env(tmp_path / "ledger"), tmp_path / "runs.db"
    _copy_store(paused_store, db)
    _one_line_error(jianmu("resume", "nope", "--store", db, env=env, cwd=tmp_path), "nope", "R")
    _one_line_error(jianmu("runs", "show", "nope", "--store", db, env=env, cwd=tmp_path), "nope")


def test_a_changed_tree_is_refused_and_the_run_stays_paused(tmp_path):
    env, db = cli_env(tmp_path / "ledger"), tmp_path / "runs.db"
    tree = tmp_path / "approvals.yaml"
    shutil.copy(APPROVALS, tree)
    shutil.copy(TREES / "ledger_tools.py", tmp_path / "ledger_tools.py")
    assert (
        jianmu(
            "run", tree, "--store", db, "--run-id", "R", "--approve", "later", env=env, cwd=tmp_path
        ).returncode
        == 3
    )
    tree.write_text("# a comment changes nothing\n" + tree.read_text())
    (held,) = [c for c in show(db, "R", env, tmp_path)["calls"] if c["status"] == "held"]
    before = _dump(db)
    tree.write_text(tree.read_text().replace("name: second", "name: changed"))
    _one_line_error(
        jianmu("resume", "R", "--store", db, "--approve", held["call_id"], env=env, cwd=tmp_path),
        "tree changed",
    )
    assert _dump(db) == before
    assert show(db, "R", env, tmp_path)["status"] == "paused"


def test_a_decision_for_a_call_that_does_not_wait_is_refused(tmp_path, paused_store):
    env, db = cli_env(tmp_path / "ledger"), tmp_path / "runs.db"
    _copy_store(paused_store, db)
    before = _dump(db)
    _one_line_error(
        jianmu("resume", "R", "--store", db, "--approve", "call_x", env=env, cwd=tmp_path),
        "call_x",
        "waiting: call_",
    )
    assert _dump(db) == before


def test_one_call_both_approved_and_denied_in_one_command_is_refused(tmp_path, paused_store):
    env, db = cli_env(tmp_path / "ledger"), tmp_path / "runs.db"
    _copy_store(paused_store, db)
    (held,) = [c for c in show(db, "R", env, tmp_path)["calls"] if c["status"] == "held"]
    before = _dump(db)
    conflict = ["--approve", held["call_id"], "--deny", held["call_id"]]
    result = jianmu("resume", "R", "--store", db, *conflict, env=env, cwd=tmp_path)
    _one_line_error(result, held["call_id"], "both approved and denied")
    assert _dump(db) == before  # nothing decided, the lease untouched
    # "all" with a deny means every other call: not a conflict.
    allowed = jianmu(
        "resume",
        "R",
        "--store",
        db,
        "--approve",
        "all",
        "--deny",
        held["call_id"],
        env=env,
        cwd=tmp_path,
    )
    assert allowed.returncode in (0, 1, 3), allowed.stderr
    assert "both approved and denied" not in allowed.stderr


@pytest.mark.parametrize("damage", ["missing", "corrupt", "newer", "locked"])
def test_a_store_that_cannot_be_used_is_a_one_line_error(tmp_path, paused_store, damage):
    env, db = cli_env(tmp_path / "ledger"), tmp_path / "runs.db"
    holder = None
    if damage != "missing":
        _copy_store(paused_store, db)
    if damage == "corrupt":
        db.write_bytes(b"this is not a database" * 100)
    if damage == "newer":
        with sqlite3.connect(db) as connection:
            connection.execute("UPDATE meta SET value = '99' WHERE key = 'format_version'")
    if damage == "locked":
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
    before = db.read_bytes() if damage == "corrupt" else _dump(db) if damage == "newer" else None
    try:
        result = jianmu("resume", "R", "--store", db, env=env, cwd=tmp_path, timeout=120)
        # A locked store may be free later: the temporary-failure status (75).
        _one_line_error(result, str(db.name), code=75 if damage == "locked" else 1)
        if damage != "locked":  # readers of a WAL file are not blocked by a writer
            listing = jianmu("runs", "--store", db, env=env, cwd=tmp_path, timeout=120)
            _one_line_error(listing, str(db.name))
    finally:
        if holder is not None:
            holder.rollback()
            holder.close()
    if damage == "missing":
        assert not db.exists()
    elif damage == "corrupt":
        assert db.read_bytes() == before
    elif damage == "newer":  # the same contents (SQLite may fold its WAL into the file)
        assert _dump(db) == before


def test_two_processes_resuming_one_run_one_wins(tmp_path, paused_store):
    ledger, db = tmp_path / "ledger", tmp_path / "runs.db"
    env = cli_env(ledger)
    _copy_store(paused_store, db)
    (held,) = [c for c in show(db, "R", env, tmp_path)["calls"] if c["status"] == "held"]
    gate = tmp_path / "gate"  # the first process waits inside the deploy until it exists
    held_open = {**env, "JIANMU_STEP_GATE": str(gate)}
    first = start(
        "resume", "R", "--store", db, "--approve", held["call_id"], env=held_open, cwd=tmp_path
    )
    try:

        def deploy_running():
            with SQLiteStore(db, create=False) as store:
                return any(e.status == "running" and e.tool == "deploy" for e in store.journal("R"))

        assert wait_for(deploy_running, timeout=60)
        second = jianmu("resume", "R", "--store", db, env=env, cwd=tmp_path)
        _one_line_error(second, "another process")
    finally:
        gate.touch()
        first.wait(timeout=60)
    assert first.returncode == 3  # paused again at the parallel's deploy
    assert ledger.read_text().count("deploy-selector") == 1
    assert os.path.exists(db)

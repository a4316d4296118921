"""Run stores, traces and batch results hold every run's state, arguments and results: they are
created readable by their owner only (0600, in folders made 0700), and a path that is not a
regular file is refused before SQLite writes anything beside it."""

from __future__ import annotations

import os
import stat

import pytest

from jianmu_bt import load_tree
from jianmu_bt.runtime.events import TraceWriter
from jianmu_bt.store import SQLiteStore, StoreError


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_new_store_its_wal_and_its_new_folders_are_private(tmp_path):
    db = tmp_path / "made" / "here" / "runs.db"
    with SQLiteStore(db) as store:
        tree = load_tree("root: {set: {values: {x: 1}}}\nstate: {x: {type: integer}}")
        tree.run(store=store, run_id="R")
        assert store.get_run("R").status == "succeeded"
        sidecars = [p for p in db.parent.iterdir() if p != db]
        assert sidecars  # the WAL and shared-memory files exist while the store is open
        assert all(_mode(p) & 0o077 == 0 for p in sidecars), [(p, oct(_mode(p))) for p in sidecars]
    assert _mode(db) == 0o600
    assert _mode(db.parent) == 0o700 and _mode(db.parent.parent) == 0o700
    assert _mode(tmp_path) == _mode(tmp_path)  # an existing folder is left as it was


def test_a_trace_is_private(tmp_path):
    writer = TraceWriter(tmp_path / "traces" / "run.jsonl")
    writer.close()
    assert _mode(tmp_path / "traces" / "run.jsonl") == 0o600


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_path_that_is_not_a_regular_file_is_refused_before_sqlite_opens_it(tmp_path, kind):
    path = tmp_path / "odd"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    with pytest.raises(StoreError, match="give the path of a file"):
        SQLiteStore(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["odd"]  # no -journal beside it

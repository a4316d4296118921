"""The batch's answers to things going wrong: a pool worker that dies on every attempt (only its
own run is charged), an input line changed before `--resume`, a line that is not UTF-8, a tree
that cannot load on a worker at first, a worker that finds no store, and an SQLite store offered
to a Ray cluster."""

from __future__ import annotations

import importlib
import sys
import uuid

import pytest
from batch_helpers import batch, calls, import_ray, results, write_inputs, write_tree

from jianmu_bt.batch import worker
from jianmu_bt.batch.backends import MAX_ATTEMPTS
from jianmu_bt.batch.worker import WorkerSpec, close_worker, load_worker_tree, run_line
from jianmu_bt.loader import load_tree
from jianmu_bt.store import SQLiteStore

CRASH_TOOLS = """
import os, pathlib, signal, time
from jianmu_bt.tools import tool

FOLDER = pathlib.Path({folder!r})


def started() -> float:
    '''Seconds from boot to this process's start (10 ms steps), as the kernel counts it.'''
    ticks = int(pathlib.Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
    return ticks / os.sysconf("SC_CLK_TCK")


@tool(read_only=True)  # its marker files are evidence, not effects: it may run again
def step(x: int) -> int:
    '''666 kills its own process on every attempt; 7 waits until 666 died {times} times, in a
    worker that started after the last death (one that saw it from the dying pool is killed
    with that pool: it must not finish first, in the moment before the pool is torn down).'''
    if x == 666:
        written = FOLDER / f"writing-{{os.getpid()}}"  # renamed whole: never read half-written
        written.write_text(repr(time.clock_gettime(time.CLOCK_BOOTTIME)))
        written.replace(FOLDER / f"crash-{{os.getpid()}}")
        os.kill(os.getpid(), signal.SIGKILL)
    if x == 7:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            crashes = [float(c.read_text()) for c in FOLDER.glob("crash-*")]
            if len(crashes) >= {times} and started() > max(crashes):
                break
            time.sleep(0.05)
        (FOLDER / f"waited-{{os.getpid()}}").write_text("")
    return x
"""

CRASH_TREE = """
version: 1
name: crasher
state:
  x: {type: integer, input: true}
  y: {type: integer}
tools: ["MODULE:step"]
root:
  sequence:
    name: Main
    children:
      - tool: {name: Step, tool: step, arguments: {x: "{x}"}, output: y}
"""


def test_a_worker_that_dies_every_time_is_charged_alone_not_the_runs_beside_it(tmp_path):
    module = f"crashtools_{uuid.uuid4().hex[:10]}"
    tools = CRASH_TOOLS.format(folder=str(tmp_path), times=MAX_ATTEMPTS)
    (tmp_path / f"{module}.py").write_text(tools)
    tree = tmp_path / "tree.yaml"
    tree.write_text(CRASH_TREE.replace("MODULE", module))
    inputs = write_inputs(tmp_path, [{"x": 666}, {"x": 7}])
    out = tmp_path / "results.jsonl"

    code, err = batch(tree, inputs, "--out", out, "--store", tmp_path / "runs.db", "--workers", 2)

    assert code == 1, err
    found = results(out)
    assert found[1]["status"] == "error"
    assert f"its worker process died {MAX_ATTEMPTS} times" in found[1]["error"]
    # the run beside it was killed with the pool each time, and still finished
    assert found[2]["status"] == "succeeded", found[2]
    assert found[2]["state"]["y"] == 7
    assert len(list(tmp_path.glob("crash-*"))) == MAX_ATTEMPTS  # the culprit: exactly its tries
    assert len(list(tmp_path.glob("waited-*"))) == 1


def test_resume_reports_a_line_changed_since_the_batch_began_instead_of_reusing_its_run(
    tmp_path,
):
    tree = write_tree(tmp_path)
    db, out = tmp_path / "runs.db", tmp_path / "results.jsonl"
    inputs = write_inputs(tmp_path, [{"x": 1}, {"x": 150}, {"x": 3}])
    assert batch(tree, inputs, "--out", out, "--store", db, "--batch-id", "c")[0] == 3  # paused

    inputs = write_inputs(tmp_path, [{"x": 1}, {"x": 151}, {"x": 3}])  # line 2 edited
    code, err = batch(tree, inputs, "--out", out, "--store", db, "--batch-id", "c", "--resume")

    assert code == 1, err
    found = results(out)
    assert found[1]["status"] == "succeeded" and found[3]["status"] == "succeeded"
    assert found[2]["status"] == "error"
    assert "line 2 changed since the batch began" in found[2]["error"]
    assert f"{inputs}:2: error: line 2 changed since the batch began" in err
    assert calls(tmp_path) == {1: 1, 150: 1, 3: 1}  # nothing ran again, 151 never ran
    with SQLiteStore(db, create=False) as store:
        assert store.get_run("c-2").status == "paused"  # the recorded run is left as it was


def test_a_line_that_is_not_utf8_is_reported_with_its_number(tmp_path):
    tree = write_tree(tmp_path)
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_bytes(b'{"x": 1}\n{"x": 2, "note": "caf\xe9"}\n{"x": 3}\n')
    out = tmp_path / "results.jsonl"

    code, err = batch(tree, inputs, "--out", out, "--store", tmp_path / "runs.db")

    assert code == 1, err
    found = results(out)
    assert [found[line]["status"] for line in (1, 2, 3)] == ["succeeded", "invalid", "succeeded"]
    assert found[2]["error"] == "not UTF-8 text (byte 22: b'\\xe9')"
    assert f"{inputs}:2: invalid: not UTF-8 text" in err
    assert "done 2, failed 0, paused 0, invalid 1" in err
    assert calls(tmp_path) == {1: 1, 3: 1}


def test_a_worker_retries_a_tree_that_failed_to_load_and_closes_what_it_keeps(tmp_path):
    module = f"latetools_{uuid.uuid4().hex[:10]}"
    tree_file = tmp_path / "tree.yaml"
    tree_file.write_text(CRASH_TREE.replace("MODULE", module))
    (tmp_path / f"{module}.py").write_text(CRASH_TOOLS.format(folder=str(tmp_path), times=1))
    with load_tree(tree_file) as tree:
        digest = tree.digest
    (tmp_path / f"{module}.py").unlink()  # the module is missing on this "worker" at first
    sys.modules.pop(module, None)
    db = tmp_path / "runs.db"
    SQLiteStore(db).close()  # the driver made the store
    spec = WorkerSpec(str(tree_file), digest, str(db))
    try:
        first = run_line(spec, 1, "w-1", {"x": 5})
        assert first["status"] == "error" and "cannot load the tree" in first["error"]

        (tmp_path / f"{module}.py").write_text(CRASH_TOOLS.format(folder=str(tmp_path), times=1))
        importlib.invalidate_caches()
        second = run_line(spec, 2, "w-2", {"x": 5})  # the failure was not kept: loads now
        assert second["status"] == "succeeded", second
        kept = load_worker_tree(spec)
        store = worker._stores[str(db)]
    finally:
        close_worker()
    assert worker._trees == {} and worker._stores == {}
    with pytest.raises(RuntimeError):
        kept.run({"x": 1})  # the kept tree was closed
    with pytest.raises(Exception):  # noqa: B017 - the store's connection is closed
        store.get_run("w-2")


def test_a_worker_does_not_create_a_store_the_driver_did_not_make(tmp_path):
    tree_file = write_tree(tmp_path)
    with load_tree(tree_file) as tree:
        spec = WorkerSpec(str(tree_file), tree.digest, str(tmp_path / "elsewhere" / "runs.db"))
    try:
        result = run_line(spec, 1, "n-1", {"x": 1})
    finally:
        close_worker()
    assert result["status"] == "error"
    assert not (tmp_path / "elsewhere").exists()
    assert calls(tmp_path) == {}


def test_a_ray_cluster_address_with_an_sqlite_store_is_refused(tmp_path):
    import_ray()  # skipped without Ray, failed with JIANMU_REQUIRE_RAY=1
    tree = write_tree(tmp_path)
    inputs = write_inputs(tmp_path, [{"x": 1}])
    db = tmp_path / "runs.db"
    code, err = batch(tree, inputs, "--ray", "ray://127.0.0.1:1", "--store", db)
    assert code == 1
    assert "cannot share the SQLite store" in err and "--store postgresql://" in err
    assert "Traceback" not in err
    assert not db.exists() and calls(tmp_path) == {}

"""`jianmu batch` on the local process pool: bad lines, a failed run, a paused run, the results
file, --resume, a worker that cannot import the tool module, and a killed worker process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from batch_helpers import (
    batch,
    calls,
    children_of,
    results,
    wait_for,
    write_inputs,
    write_tree,
)

from jianmu_bt.store import SQLiteStore

LINES = [
    {"x": 1},  # 1: succeeds
    "not json",  # 2: invalid
    {"x": "seven"},  # 3: invalid (type)
    {"x": -5},  # 4: fails (stall raises)
    "",  # 5: blank, not an input
    {"x": 150},  # 6: pauses (publish held for approval)
    {"nope": 1},  # 7: invalid (unknown field)
    {},  # 8: invalid (missing input x)
    {"x": 2},  # 9: succeeds
]


def test_a_batch_reports_every_line_once_and_goes_on_past_bad_lines(tmp_path):
    tree = write_tree(tmp_path)
    inputs = write_inputs(tmp_path, LINES)
    out, db = tmp_path / "results.jsonl", tmp_path / "runs.db"
    code, err = batch(tree, inputs, "--out", out, "--store", db, "--workers", 2, "--batch-id", "b")

    assert code == 1, err  # a failed run and invalid lines
    found = results(out)
    assert sorted(found) == [1, 2, 3, 4, 6, 7, 8, 9]  # tagged by line; blank line 5 skipped
    status = {line: r["status"] for line, r in found.items()}
    assert status == {
        1: "succeeded", 2: "invalid", 3: "invalid", 4: "failed",
        6: "paused", 7: "invalid", 8: "invalid", 9: "succeeded",
    }  # fmt: skip
    assert found[1]["run_id"] == "b-1" and found[1]["state"]["z"] == 2
    assert found[9]["state"]["y"] == 3
    assert "not JSON" in found[2]["error"]
    assert "state field 'x'" in found[3]["error"]
    assert "no field 'nope'" in found[7]["error"]
    assert "missing input(s): x" in found[8]["error"]
    assert "negative input" in found[4]["reason"]
    assert "run_id" not in found[2]  # an invalid line never became a run
    # invalid lines never ran; every valid line's first step ran exactly once
    assert calls(tmp_path) == {1: 1, -5: 1, 150: 1, 2: 1}
    # stderr: the bad lines by number, the final counts, the paused run and how to continue
    assert f"{inputs}:2: invalid: not JSON" in err
    assert f"{inputs}:4: failed:" in err
    assert "done 2, failed 1, paused 1, invalid 4" in err
    assert "line 6: run b-6: publish [call_" in err
    assert "jianmu resume RUN_ID --approve CALL_ID" in err
    with SQLiteStore(db, create=False) as store:
        recorded = {run.run_id: run.status for run in store.runs()}
    assert recorded == {"b-1": "succeeded", "b-4": "failed", "b-6": "paused", "b-9": "succeeded"}


def test_resume_skips_finished_runs_and_reports_them_from_the_store(tmp_path):
    tree = write_tree(tmp_path)
    inputs = write_inputs(tmp_path, [{"x": 1}, {"x": 150}, {"x": 3}])
    out, db = tmp_path / "results.jsonl", tmp_path / "runs.db"
    assert batch(tree, inputs, "--out", out, "--store", db, "--workers", 1)[0] == 3  # paused
    first = results(out)

    # the same batch again without --resume is refused, and the results file is left alone
    code, err = batch(tree, inputs, "--out", out, "--store", db)
    assert code == 1 and "already has runs" in err and "--resume" in err
    assert results(out) == first

    # one more input: --resume runs only that one; the others come from the store
    inputs = write_inputs(tmp_path, [{"x": 1}, {"x": 150}, {"x": 3}, {"x": 4}])
    code, err = batch(tree, inputs, "--out", out, "--store", db, "--resume", "--batch-id",
                      first[1]["run_id"].rsplit("-", 1)[0])  # fmt: skip
    assert code == 3, err
    again = results(out)
    assert {line: r["status"] for line, r in again.items()} == {
        1: "succeeded", 2: "paused", 3: "succeeded", 4: "succeeded"
    }  # fmt: skip
    assert again[1]["state"] == first[1]["state"]
    assert calls(tmp_path) == {1: 1, 150: 1, 3: 1, 4: 1}  # nothing ran twice
    assert "(3 recorded before)" in err


def test_a_tool_module_that_does_not_import_on_the_workers_fails_each_run_clearly(tmp_path):
    tree = write_tree(tmp_path, parent_only=True)
    inputs = write_inputs(tmp_path, [{"x": 1}, {"x": 2}, {"x": 3}])
    out = tmp_path / "results.jsonl"
    code, _ = batch(tree, inputs, "--out", out, "--store", tmp_path / "runs.db", "--workers", 2)
    assert code == 1
    found = results(out)
    assert sorted(found) == [1, 2, 3]
    for result in found.values():
        assert result["status"] == "error"
        assert "cannot load the tree on this worker" in result["error"]
        assert "imports only in the test process" in result["error"]
    assert calls(tmp_path) == {}


def test_a_killed_pool_worker_is_replaced_and_its_run_resumed_without_repeating_steps(tmp_path):
    tree = write_tree(tmp_path)
    inputs = write_inputs(tmp_path, [{"x": 1}, {"x": 1000}, {"x": 2}, {"x": 3}])
    out = tmp_path / "results.jsonl"
    outcome: dict[str, object] = {}

    def run() -> None:
        outcome["code"], outcome["err"] = batch(
            tree, inputs, "--out", out, "--store", tmp_path / "runs.db", "--workers", 2
        )

    thread = threading.Thread(target=run)
    thread.start()
    marker = wait_for(lambda: list(tmp_path.glob("stall-1000-*")))[0]
    os.kill(int(marker.name.rsplit("-", 1)[1]), signal.SIGKILL)
    thread.join(120)
    assert not thread.is_alive()
    assert outcome["code"] == 0, outcome["err"]
    found = results(out)
    assert {line: r["status"] for line, r in found.items()} == dict.fromkeys(
        [1, 2, 3, 4], "succeeded"
    )
    assert found[2]["state"]["z"] == 2000
    # Count (before the kill) is not run again on resume: every input's first step ran once
    assert calls(tmp_path) == {1: 1, 1000: 1, 2: 1, 3: 1}
    assert children_of(os.getpid()) == set()  # no pool worker left behind


def test_without_ray_installed_the_ray_option_names_the_extra(tmp_path, monkeypatch):
    tree = write_tree(tmp_path)
    inputs = write_inputs(tmp_path, [{"x": 1}])
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    code, err = batch(tree, inputs, "--ray", "--store", tmp_path / "runs.db")
    assert code == 1
    assert "Ray is not installed" in err and "pip install 'jianmu-bt[ray]'" in err
    assert "Traceback" not in err


def test_command_line_mistakes_are_one_line_errors(tmp_path, capsys):
    tree = write_tree(tmp_path)
    inputs = write_inputs(tmp_path, [{"x": 1}])
    store = tmp_path / "runs.db"
    for args, expected in [
        ((tree, tmp_path / "missing.jsonl"), "no such inputs file"),
        ((tree, inputs, "--workers", 0), "--workers must be at least 1"),
        ((tree, inputs, "--timeout", -1), "--timeout must be more than 0"),
        ((tree, inputs, "--out", tmp_path / "no" / "r.jsonl"), "not a file in an existing folder"),
    ]:
        code, err = batch(*args, "--store", store)
        assert code == 1 and expected in err and "Traceback" not in err, err
    assert not store.exists()  # nothing ran


def test_the_documented_example_batch_runs_the_quickstart_tree(tmp_path):
    """docs/scale-out.md's example: trees/quickstart.yaml over examples/batch's inputs (its
    scripted LLM is loaded afresh for each run, so every run gets the script's replies)."""
    root = Path(__file__).resolve().parents[2]
    inputs = root / "examples" / "batch" / "quickstart-inputs.jsonl"
    out = tmp_path / "results.jsonl"
    code, err = batch(
        root / "trees" / "quickstart.yaml", inputs, "--workers", 2, "--out", out,
        "--store", tmp_path / "runs.db",
    )  # fmt: skip
    assert code == 1, err
    found = results(out)
    assert {line: r["status"] for line, r in found.items()} == {
        1: "succeeded", 2: "succeeded", 3: "failed", 4: "invalid", 5: "succeeded"
    }  # fmt: skip
    assert [found[line]["state"]["total"] for line in (1, 2, 5)] == ["42", "1024", "42"]
    assert all("391" in found[line]["state"]["answer"] for line in (1, 2, 5))
    assert f"{inputs}:3: failed: Sum: Error: division by zero" in err


def test_resume_continues_a_batch_whose_process_was_killed(tmp_path):
    tree = write_tree(tmp_path)
    inputs = write_inputs(tmp_path, [{"x": 1}, {"x": 2}, {"x": 1000}, {"x": 3}])
    out, db = tmp_path / "results.jsonl", tmp_path / "runs.db"
    command = [sys.executable, "-m", "jianmu_bt.cli", "batch", str(tree), str(inputs)]
    command += ["--store", str(db), "--workers", "1", "--out", str(out)]
    process = subprocess.Popen(command, start_new_session=True, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: list(tmp_path.glob("stall-1000-*")))
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the batch and its workers, mid-run
        process.wait(30)
    with SQLiteStore(db, create=False) as store:
        before = {run.run_id.rsplit("-", 1)[1]: run.status for run in store.runs()}
    assert before == {"1": "succeeded", "2": "succeeded", "3": "running"}

    code, err = batch(tree, inputs, "--store", db, "--workers", 1, "--out", out, "--resume")
    assert code == 0, err
    found = results(out)
    assert [found[line]["status"] for line in (1, 2, 3, 4)] == ["succeeded"] * 4
    assert found[3]["state"]["z"] == 2000
    assert calls(tmp_path) == {1: 1, 2: 1, 1000: 1, 3: 1}  # nothing finished ran again
    assert "(2 recorded before)" in err

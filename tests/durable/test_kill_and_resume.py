"""kill -9 at each kind of step of a run of side-effecting steps, then resume until done: every
step happens exactly once (counted in a ledger file the tools write). The same pipeline runs as
a YAML tree (`jianmu run` / `jianmu resume`) and as a tree built in Python (a PythonTree in a
script of its own, resumed by the script or by `jianmu resume`)."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time

import pytest
from durable_helpers import (
    PIPELINE,
    PIPELINE_STEPS,
    TREES,
    cli_env,
    jianmu,
    ledger_names,
    start,
    wait_for,
)
from postgres_server import create_database

from jianmu_bt.cli.runs_command import run_document
from jianmu_bt.store import RunNotFoundError, SQLiteStore, StoreError, open_store

STEP_DELAY = 0.03


def _position(db) -> int:
    """The run's last journal position (0 before the run is recorded)."""
    try:
        with open_store(db, create=False) as store:
            return len(store.journal_log("R"))
    except (RunNotFoundError, StoreError):
        return 0


def _reference_positions(tmp_path) -> int:
    """How many journal rows a run of the pipeline writes when nothing goes wrong."""
    ledger, db = tmp_path / "reference.ledger", tmp_path / "reference.db"
    env = cli_env(ledger)
    result = jianmu("run", PIPELINE, "--store", db, "--run-id", "R", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert ledger_names(ledger) == dict.fromkeys(PIPELINE_STEPS, 1)
    with SQLiteStore(db, create=False) as store:
        return len(store.journal_log("R"))


REFERENCE_ROWS = 17  # the journal rows of an undisturbed run of the pipeline

# Where to kill: one point of each kind of moment the pipeline's 17 rows give (killing after
# every row repeats these kinds and costs a minute). Each kill lands at a random moment inside
# the step that follows the row, and resumed processes are killed again at random. Steps that
# may run again (b, p3 idempotent) write no `running` row, and their outcomes are written with
# the next row (group commit): rows 3 and 11 become visible together with the row after them,
# or on their own 50 ms later.
KILL_POINTS = {
    1: "an effectful, non-idempotent step in flight (a)",
    2: "an idempotent step in flight, unrecorded (b)",
    4: "c in flight, b's outcome written with its start",
    6: "after the first LLM reply, before its tool calls",
    8: "inside a parallel batch: two of three calls in flight",
    10: "inside a parallel batch: two of three calls done",
    13: "the agent's single later call in flight (s4)",
    15: "after the agent's last LLM reply",
    16: "the last step in flight (z)",
    17: "after the last row, while the run is recorded as finished",
}


def _show(db):
    """What `jianmu runs show R --json` prints, read in this process (no process start)."""
    with open_store(db, create=False) as store:
        return run_document(store, "R")


def _decide(document, ledger) -> list[str]:
    """A reviewer's decisions: a call in doubt whose step is in the ledger already happened
    (skip it); one that is not did not (run it again)."""
    written = ledger_names(ledger)
    flags = []
    for call in document["calls"]:
        if call["status"] == "in_doubt":
            happened = written[call["arguments"]["name"]] > 0
            flags += ["--deny" if happened else "--approve", call["call_id"]]
    return flags


PYTHON_PIPELINE = TREES / "python_pipeline.py"


def _python(*args, env, cwd) -> subprocess.Popen[str]:
    """Start the Python-built pipeline's script (`run` or `resume`) without waiting."""
    return subprocess.Popen(
        [sys.executable, str(PYTHON_PIPELINE), *map(str, args)],
        env={**env, "PYTHONPATH": f"{env['PYTHONPATH']}:{TREES}"},
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_the_reference_run_writes_each_step_once_and_fits_the_kill_points(tmp_path):
    assert _reference_positions(tmp_path) == REFERENCE_ROWS == max(KILL_POINTS)


def test_the_python_built_pipeline_writes_the_same_journal_rows(tmp_path):
    ledger, db = tmp_path / "ledger", tmp_path / "runs.db"
    process = _python("run", "R", db, env=cli_env(ledger), cwd=tmp_path)
    assert process.wait(timeout=60) == 0, process.stderr.read()
    assert ledger_names(ledger) == dict.fromkeys(PIPELINE_STEPS, 1)
    with SQLiteStore(db, create=False) as store:
        assert len(store.journal_log("R")) == REFERENCE_ROWS
        assert store.get_run("R").tree_path == "python:python_pipeline:pipeline"


@pytest.mark.parametrize(
    ("built", "where"),
    [("yaml", "sqlite"), ("python", "sqlite"), ("yaml", "postgres"), ("python", "postgres")],
)
@pytest.mark.parametrize("kill_after", sorted(KILL_POINTS))
def test_kill_9_after_any_journal_row_then_resume_runs_each_step_exactly_once(
    request, tmp_path, kill_after, built, where
):
    rng = random.Random(kill_after)
    ledger, db = tmp_path / "ledger", tmp_path / "runs.db"
    if where == "postgres":
        db = create_database(request.getfixturevalue("postgres_server"))
    env = cli_env(ledger, STEP_DELAY)
    if built == "yaml":
        first = start("run", PIPELINE, "--store", db, "--run-id", "R", env=env, cwd=tmp_path)
    else:
        first = _python("run", "R", db, env=env, cwd=tmp_path)
    # Kill once the run is recorded and has written `kill_after` journal rows, at a random
    # moment inside the step that follows.
    wait_for(lambda: _position(db) >= max(kill_after, 1) or first.poll() is not None)
    if first.poll() is None:
        time.sleep(rng.uniform(0, STEP_DELAY))
        first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)

    kills = 0
    for _ in range(12):
        document = _show(db)
        if document["status"] in ("succeeded", "failed"):
            break
        flags = _decide(document, ledger)
        if built == "python" and rng.random() < 0.5:  # its own script, or `jianmu resume`
            process = _python("resume", "R", db, *flags, env=env, cwd=tmp_path)
        else:
            python_path = {**env, "PYTHONPATH": f"{env['PYTHONPATH']}:{TREES}"}
            process = start("resume", "R", "--store", db, *flags, env=python_path, cwd=tmp_path)
        if kills < 2 and rng.random() < 0.4:  # sometimes the resumed process dies too
            time.sleep(rng.uniform(0.4, 0.9))
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                kills += 1
        process.wait(timeout=60)
        assert process.returncode in (0, 3, -signal.SIGKILL), process.stderr.read()
    document = _show(db)
    assert document["status"] == "succeeded", document
    counts = ledger_names(ledger)
    assert all(counts[name] == 1 for name in PIPELINE_STEPS), counts
    assert set(counts) == set(PIPELINE_STEPS)

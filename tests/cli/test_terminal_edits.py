"""At the terminal desks (`jianmu run --approve ask`, `jianmu resume --approve ask`) `e` approves
a held call with other arguments typed as one JSON object: the call runs with them, once; an edit
that is not JSON or does not fit the tool's schema is refused in one line and the same call is
asked about again; the end of input at the edit's prompt is a no."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bill_tree import bill_setup, ledger
from cli_helpers import answering, jianmu

from jianmu_bt.store import SQLiteStore

#: `e`, then text that is not JSON; `e`, then arguments that do not fit; `e`, then good ones.
EDITS = 'e\n{amount: 5\ne\n{"amount": "lots"}\ne\n{"amount": 50}\n'
QUESTION = "? [y/N/e] "


def _approved(tmp_path: Path) -> dict:
    """The `approved` journal row's document of run R."""
    with SQLiteStore(tmp_path / "runs.db", create=False) as runs:
        return next(e.result for e in runs.journal_log("R") if e.status == "approved")


def _assert_refused_twice_then_asked_again(done: subprocess.CompletedProcess[str]) -> None:
    said = done.stderr.splitlines()
    refused = [line for line in said if "edit refused" in line]
    assert len(refused) == 2, done.stderr
    assert refused[0].endswith("edit refused: not JSON at line 1 column 2: " + EXPECTED_NAME)
    assert "do not fit pay's schema: arguments.amount" in refused[1]
    assert (done.stdout + done.stderr).count(QUESTION) == 3  # the same call, asked again
    assert "Traceback" not in done.stderr


EXPECTED_NAME = "Expecting property name enclosed in double quotes"


def test_run_ask_approves_with_the_edited_arguments_after_refusing_bad_edits(tmp_path):
    store, env = bill_setup(tmp_path)
    done = answering(
        EDITS, "run", str(tmp_path / "bill.yaml"), *store, "--run-id", "R", "--approve", "ask",
        env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    _assert_refused_twice_then_asked_again(done)
    assert ledger(tmp_path) == ["50"]
    approved = _approved(tmp_path)
    assert approved["by"] == "terminal" and approved["arguments"] == {"amount": 50}


def test_resume_ask_approves_with_the_edited_arguments_after_refusing_bad_edits(tmp_path):
    store, env = bill_setup(tmp_path)
    paused = jianmu("run", tmp_path / "bill.yaml", *store, "--run-id", "R", "--approve", "later",
                    env=env)  # fmt: skip
    assert paused.returncode == 3, paused.stdout + paused.stderr
    done = answering(EDITS, "resume", "R", *store, "--approve", "ask", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    _assert_refused_twice_then_asked_again(done)
    assert ledger(tmp_path) == ["50"]
    assert _approved(tmp_path) == {"by": "cli", "arguments": {"amount": 50}}


def test_the_end_of_input_at_the_edits_prompt_is_a_no(tmp_path):
    store, env = bill_setup(tmp_path)
    paused = jianmu("run", tmp_path / "bill.yaml", *store, "--run-id", "R", "--approve", "later",
                    env=env)  # fmt: skip
    assert paused.returncode == 3, paused.stdout + paused.stderr
    done = answering("e\n", "resume", "R", *store, "--approve", "ask", env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "arguments as JSON: " in done.stdout
    assert ledger(tmp_path) == []
    with SQLiteStore(tmp_path / "runs.db", create=False) as runs:
        assert "denied" in [e.status for e in runs.journal_log("R")]

"""At the terminal desks (`jianmu run --approve ask`, `jianmu resume --approve ask`) `e` approves
a held call with other arguments typed as one JSON object: the call runs with them, once; an edit
that is not JSON or does not fit the tool's schema is refused in one line and the same call is
asked about again; the end of input at the edit's prompt is a no."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cli_helpers import REPO, jianmu

from jianmu_bt.store import SQLiteStore

TREE = """
version: 1
name: bill
state:
  receipt: {type: string}
tools: ['money:pay']
guard: {approve: [pay]}
root:
  tool: {name: Pay, tool: pay, arguments: {amount: 5000}, output: receipt}
"""

TOOLS = '''
import os
from jianmu_bt.tools import tool


@tool(effect_tags=["payments"])
def pay(amount: int) -> str:
    """Pay an amount (each payment is a line of the ledger)."""
    with open(os.environ["LEDGER"], "a") as ledger:
        ledger.write(f"{amount}\\n")
    return f"paid {amount}"
'''

#: `e`, then text that is not JSON; `e`, then arguments that do not fit; `e`, then good ones.
EDITS = 'e\n{amount: 5\ne\n{"amount": "lots"}\ne\n{"amount": 50}\n'
QUESTION = "? [y/N/e] "


def _setup(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    (tmp_path / "bill.yaml").write_text(TREE)
    (tmp_path / "money.py").write_text(TOOLS)
    env = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}", "LEDGER": str(tmp_path / "ledger")}
    return ["--store", str(tmp_path / "runs.db")], env


def _ledger(tmp_path: Path) -> list[str]:
    ledger = tmp_path / "ledger"
    return ledger.read_text().split() if ledger.exists() else []


def _approved(tmp_path: Path) -> dict:
    """The `approved` journal row's document of run R."""
    with SQLiteStore(tmp_path / "runs.db", create=False) as runs:
        return next(e.result for e in runs.journal_log("R") if e.status == "approved")


def answering(text: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`jianmu ARGS` with `text` as its standard input (not a terminal)."""
    return subprocess.run(
        [sys.executable, "-m", "jianmu_bt.cli", *args],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "TERM": "dumb", **env},
        check=False,
    )


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
    store, env = _setup(tmp_path)
    done = answering(
        EDITS, "run", str(tmp_path / "bill.yaml"), *store, "--run-id", "R", "--approve", "ask",
        env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    _assert_refused_twice_then_asked_again(done)
    assert _ledger(tmp_path) == ["50"]
    approved = _approved(tmp_path)
    assert approved["by"] == "terminal" and approved["arguments"] == {"amount": 50}


def test_resume_ask_approves_with_the_edited_arguments_after_refusing_bad_edits(tmp_path):
    store, env = _setup(tmp_path)
    paused = jianmu("run", tmp_path / "bill.yaml", *store, "--run-id", "R", "--approve", "later",
                    env=env)  # fmt: skip
    assert paused.returncode == 3, paused.stdout + paused.stderr
    done = answering(EDITS, "resume", "R", *store, "--approve", "ask", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    _assert_refused_twice_then_asked_again(done)
    assert _ledger(tmp_path) == ["50"]
    assert _approved(tmp_path) == {"by": "cli", "arguments": {"amount": 50}}


def test_the_end_of_input_at_the_edits_prompt_is_a_no(tmp_path):
    store, env = _setup(tmp_path)
    paused = jianmu("run", tmp_path / "bill.yaml", *store, "--run-id", "R", "--approve", "later",
                    env=env)  # fmt: skip
    assert paused.returncode == 3, paused.stdout + paused.stderr
    done = answering("e\n", "resume", "R", *store, "--approve", "ask", env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "arguments as JSON: " in done.stdout
    assert _ledger(tmp_path) == []
    with SQLiteStore(tmp_path / "runs.db", create=False) as runs:
        assert "denied" in [e.status for e in runs.journal_log("R")]

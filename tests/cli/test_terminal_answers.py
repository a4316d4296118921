"""At a real terminal (a pseudo-terminal, so `--approve ask` is the default): `jianmu resume`
asks the paused run's questions, shows what the answer must be, asks again after a bad answer,
and lists the external calls it does not ask about; `r` at a held call's question answers the
call in its place (`jianmu run` and `jianmu resume`), an empty reply asking again."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

from bill_tree import bill_setup, ledger
from cli_helpers import REPO, jianmu

from jianmu_bt.store import SQLiteStore

#: A question with choices, one with a default, and an external call, all waiting at the pause.
TREE = """
version: 1
name: release
tools: ["ci:ci_result"]
state:
  plan: {type: string}
  budget: {type: integer, default: 0}
  verdict: {type: dict, default: {}}
root:
  parallel:
    children:
      - tool: {name: CI, tool: ci_result, arguments: {branch: main}, output: verdict}
      - ask: {name: PickPlan, question: "Which plan?", choices: [careful, fast], output: plan}
      - ask:
          name: Budget
          question: "Budget?"
          schema: {type: integer, minimum: 1}
          output: budget
          default: 5
"""

TOOLS = """
from jianmu_bt.tools.external import ExternalTool

ci_result = ExternalTool(
    "ci_result", "Run CI on a branch.",
    parameters={"type": "object", "properties": {"branch": {"type": "string"}}},
    output_schema={"type": "object", "properties": {"passed": {"type": "boolean"}},
                   "required": ["passed"]},
)
"""

#: Longest wait for the command's next output: a safety limit, never asserted on.
PATIENCE = 60


class Terminal:
    """`jianmu ARGS` with a pseudo-terminal as its stdin, stdout and stderr."""

    def __init__(self, *args: str | Path, env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jianmu_bt.cli", *map(str, args)],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=REPO,
            env={**os.environ, "TERM": "dumb", **env},
            close_fds=True,
        )
        os.close(slave)
        self.seen = ""

    def expect(self, text: str) -> str:
        """Read until `text` appears after what was expected before; what was read up to it."""
        while text not in self.seen:
            ready, _, _ = select.select([self.master], [], [], PATIENCE)
            assert ready, f"no {text!r} in {self.seen!r}"
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # the command ended and closed the terminal
                chunk = b""
            assert chunk, f"the command ended without {text!r}: {self.seen!r}"
            self.seen += chunk.decode("utf-8", "replace").replace("\r\n", "\n")
        before, _, self.seen = self.seen.partition(text)
        return before + text

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    def finish(self) -> int:
        """Wait for the command to end (its output drained) and return its exit status."""
        while True:
            ready, _, _ = select.select([self.master], [], [], PATIENCE)
            try:
                chunk = os.read(self.master, 4096) if ready else b""
            except OSError:
                chunk = b""
            if not chunk:
                break
            self.seen += chunk.decode("utf-8", "replace").replace("\r\n", "\n")
        os.close(self.master)
        return self.process.wait(timeout=PATIENCE)


def _release(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    (tmp_path / "release.yaml").write_text(TREE)
    (tmp_path / "ci.py").write_text(TOOLS)
    env = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"}
    return ["--store", str(tmp_path / "runs.db")], env


def test_resume_at_a_terminal_asks_each_waiting_question_and_lists_the_external_call(tmp_path):
    store, env = _release(tmp_path)
    paused = jianmu("run", tmp_path / "release.yaml", *store, "--run-id", "R", "--approve",
                    "later", env=env)  # fmt: skip
    assert paused.returncode == 3, paused.stdout + paused.stderr
    term = Terminal("resume", "R", *store, env=env)
    asked = term.expect("your answer: ")
    assert "The tree asks (step 'PickPlan') [q_" in asked
    assert "Which plan?" in asked and "answer with one of: careful, fast" in asked
    term.type("slow")
    assert "answer: 'slow' is not one of ['careful', 'fast']" in term.expect("your answer: ")
    term.type("fast")
    asked = term.expect("your answer: ")
    assert "The tree asks (step 'Budget')" in asked and "a whole number >= 1" in asked
    assert "an empty line takes the default: 5" in asked
    term.type("0")
    assert "0 is less than the minimum of 1" in term.expect("your answer: ")
    term.type("")  # the default
    listed = term.expect("paused")
    assert "waiting for its result from outside: call_" in listed
    assert "(not asked here: give it with --result call_" in listed
    assert term.finish() == 3  # the external call still waits
    with SQLiteStore(tmp_path / "runs.db", create=False) as runs:
        values = {e.node: e.result.get("output") for e in runs.journal("R") if e.tool == "ask"}
        assert sorted(values.values(), key=str) == [5, "fast"]
        assert all(e.result["by"] == "cli" for e in runs.journal("R") if e.tool == "ask")


def _receipt(tmp_path: Path, run_id: str) -> str:
    done = jianmu("runs", "show", run_id, "--store", tmp_path / "runs.db", "--json")
    return json.loads(done.stdout)["state"]["receipt"]


def _respond_at(term: Terminal, reply: str) -> None:
    asked = term.expect("? [y/N/e] ")
    assert "r respond in its place" in asked
    term.type("r")
    term.expect("reply the agent reads as the call's result: ")
    term.type("")  # no reply: the same call is asked about again
    assert "no reply given; asking again" in term.expect("? [y/N/e] ")
    term.type("r")
    term.expect("reply the agent reads as the call's result: ")
    term.type(reply)


def test_r_at_the_run_desk_answers_the_held_call_in_its_place(tmp_path):
    store, env = bill_setup(tmp_path)
    term = Terminal("run", tmp_path / "bill.yaml", *store, "--run-id", "R", env=env)
    _respond_at(term, "Already paid by card.")
    assert term.finish() == 0, term.seen
    assert ledger(tmp_path) == []  # the call did not run
    assert _receipt(tmp_path, "R").endswith("Already paid by card.")


def test_r_at_the_resume_desk_answers_the_held_call_in_its_place(tmp_path):
    store, env = bill_setup(tmp_path)
    paused = jianmu("run", tmp_path / "bill.yaml", *store, "--run-id", "R", "--approve", "later",
                    env=env)  # fmt: skip
    assert paused.returncode == 3, paused.stdout + paused.stderr
    term = Terminal("resume", "R", *store, env=env)
    _respond_at(term, "Paid last week.")
    assert term.finish() == 0, term.seen
    assert ledger(tmp_path) == []
    assert _receipt(tmp_path, "R").endswith("Paid last week.")

"""A paused run's questions and external calls, through the real command line: `jianmu run`
lists them and says how to go on, `jianmu resume --answer/--result` gives their values (checked
against their schemas, refused in one line, never twice, never after a timeout), and `jianmu
runs waiting` lists what every paused run of a store waits for."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import REPO, answering, assert_clean_failure, jianmu

from jianmu_bt.cli.errors import CLIError
from jianmu_bt.cli.supplied_values import answer_from_text, parse_answers, parse_results
from jianmu_bt.store import SQLiteStore

#: The external call first: both it and the question are journaled before the run pauses.
TREE = """
version: 1
name: release
tools: ["ci:ci_result"]
state:
  plan: {type: string}
  verdict: {type: dict, default: {}}
root:
  parallel:
    children:
      - tool: {name: CI, tool: ci_result, arguments: {branch: main}, output: verdict}
      - ask: {name: PickPlan, question: "Which plan?", choices: [careful, fast], output: plan}
"""

TOOLS = """
from jianmu_bt.tools.external import ExternalTool

ci_result = ExternalTool(
    "ci_result",
    "Run CI on a branch; the verdict comes back later.",
    parameters={"type": "object", "properties": {"branch": {"type": "string"}},
                "required": ["branch"]},
    output_schema={"type": "object", "properties": {"passed": {"type": "boolean"}},
                   "required": ["passed"]},
)
"""

#: A question that waits one second at most, without a default.
TIMED = """
version: 1
name: timed
state:
  note: {type: string}
root:
  ask: {name: Note, question: "Any note?", output: note, wait: 1}
"""


class Setup:
    """The tree, its tools and a store in a temporary folder; `jianmu` runs there."""

    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path
        (tmp_path / "release.yaml").write_text(TREE)
        (tmp_path / "timed.yaml").write_text(TIMED)
        (tmp_path / "ci.py").write_text(TOOLS)
        self.env = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"}
        self.store = ("--store", str(tmp_path / "runs.db"))

    def __call__(self, *args: str | Path) -> Any:
        return jianmu(*args, *self.store, cwd=self.path, env=self.env)

    def paused(self, run_id: str = "R", tree: str = "release.yaml") -> tuple[str, str]:
        """Start a run that pauses: its question id and external call id."""
        done = self("run", self.path / tree, "--run-id", run_id, "--approve", "later")
        assert done.returncode == 3, done.stdout + done.stderr
        steps = self.journal(run_id)
        question = next((e.call_id for e in steps if e.tool == "ask"), "")
        call = next((e.call_id for e in steps if e.tool == "ci_result"), "")
        return question, call

    def journal(self, run_id: str) -> list[Any]:
        with SQLiteStore(self.path / "runs.db", create=False) as runs:
            return runs.journal(run_id)

    def waiting(self) -> list[dict[str, Any]]:
        listed = self("runs", "waiting", "--json")
        assert listed.returncode == 0, listed.stderr
        return json.loads(listed.stdout)["waiting"]

    def state(self, run_id: str) -> dict[str, Any]:
        shown = self("runs", "show", run_id, "--json")
        return json.loads(shown.stdout)["state"]


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    return Setup(tmp_path)


def test_a_paused_run_lists_its_question_and_its_external_call_and_how_to_go_on(setup):
    done = setup("run", setup.path / "release.yaml", "--run-id", "R", "--approve", "later")
    assert done.returncode == 3, done.stdout + done.stderr
    call, question = (e.call_id for e in setup.journal("R"))
    lines = done.stdout.splitlines()
    assert f"  question {question}  Which plan?  (one of: careful, fast)" in lines
    assert f'  waiting  {call}  ci_result({{"branch": "main"}})' in lines
    assert lines[-1] == (
        f"Continue with: jianmu resume R --answer {question}=... --result {call}=JSON"
    )
    as_json = setup("run", setup.path / "release.yaml", "--run-id", "R2", "--approve", "later",
                    "--json")  # fmt: skip
    report = json.loads(as_json.stdout)
    kinds = {step["kind"]: step for step in report["waiting"]}
    assert set(kinds) == {"question", "external"}
    assert kinds["question"]["question"] == "Which plan?"
    assert kinds["question"]["schema"] == {"type": "string", "enum": ["careful", "fast"]}
    assert kinds["external"]["schema"]["required"] == ["passed"]
    assert kinds["question"]["deadline"] is None and kinds["external"]["deadline"] is None


def test_values_that_do_not_fit_are_refused_in_one_line_and_the_steps_keep_waiting(setup):
    question, call = setup.paused()
    refusals = {
        ("--answer", f"{question}=slow"): "answer: 'slow' is not one of ['careful', 'fast']",
        ("--answer", f'{question}={{"plan": fast}}'): "must be JSON",
        ("--result", f"{call}=passed"): f"--result {call}: the result must be JSON: not JSON",
        ("--result", f'{call}={{"passed": 1}}'): "result.passed: 1 is not of type 'boolean'",
        ("--answer", "q_nope=fast"): f"waiting: {question} (ask)",
        ("--answer", f"{question}=fast", "--answer", f"{question}=careful"): "given twice",
        ("--result", f"{call}=@{setup.path / 'missing.json'}"): "cannot read",
    }
    for given, message in refusals.items():
        done = setup("resume", "R", *given)
        assert_clean_failure(done, message)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert {step["id"] for step in setup.waiting()} == {question, call}
    assert [e.status for e in setup.journal("R")] == ["waiting", "waiting"]


def test_good_values_go_on_once_and_are_recorded_as_given_at_the_command_line(setup):
    question, call = setup.paused()
    (setup.path / "verdict.json").write_text('{"passed": true}\n')
    first = setup("resume", "R", "--result", f"{call}=@{setup.path / 'verdict.json'}")
    assert first.returncode == 3, first.stdout + first.stderr  # the question still waits
    assert f"Continue with: jianmu resume R --answer {question}=..." in first.stdout
    again = setup("resume", "R", "--result", f'{call}={{"passed": false}}')
    assert_clean_failure(again, f"external call {call} of run R already has its value")
    done = setup("resume", "R", "--answer", f"{question}=fast")
    assert done.returncode == 0, done.stdout + done.stderr
    assert setup.state("R")["plan"] == "fast"
    assert setup.state("R")["verdict"] == {"passed": True}
    rows = {e.call_id: e.result for e in setup.journal("R")}
    assert rows[question]["by"] == rows[call]["by"] == "cli"
    assert rows[question]["output"] == "fast"


def test_a_value_after_the_deadline_is_refused(setup):
    setup.paused("T", "timed.yaml")
    (entry,) = setup.journal("T")
    deadline = entry.result["deadline"]
    while time.time() <= deadline:  # no assertion on time: just past the question's deadline
        time.sleep(max(0.01, deadline - time.time()))
    late = setup("resume", "T", "--answer", f"{entry.call_id}=too late")
    assert_clean_failure(late, f"question {entry.call_id} of run T timed out")
    assert setup.journal("T")[0].status == "waiting"


def test_runs_waiting_lists_every_step_of_the_paused_runs_only(setup):
    question, call = setup.paused("A")
    setup.paused("B")
    finished = setup("resume", "B", "--answer", f"{question}=careful",
                     "--result", f'{call}={{"passed": true}}')  # fmt: skip
    assert finished.returncode == 0, finished.stdout + finished.stderr
    rows = setup.waiting()
    assert [(row["run_id"], row["kind"], row["id"]) for row in rows] == [
        ("A", "external", call),
        ("A", "question", question),
    ]
    external, asked = rows
    assert external["tree"] == "release" and external["tool"] == "ci_result"
    assert external["arguments"] == {"branch": "main"}
    assert asked["question"] == "Which plan?" and asked["deadline"] is None
    text = setup("runs", "waiting")
    assert text.stdout.splitlines() == [
        f'A  release  external  {call}  ci_result({{"branch": "main"}})',
        f"A  release  question  {question}  Which plan?  (one of: careful, fast)",
    ]


def test_an_answer_is_json_when_it_is_json_else_the_text():
    assert answer_from_text("fast") == "fast"
    assert answer_from_text("7") == 7
    assert answer_from_text('"7"') == "7"
    assert answer_from_text('["a", "b"]') == ["a", "b"]
    assert answer_from_text("NaN") == "NaN"  # not JSON: the text
    assert answer_from_text("two words") == "two words"
    assert parse_answers(["q_1=a=b"]) == {"q_1": "a=b"}
    assert parse_results(['call_1={"passed": true}']) == {"call_1": {"passed": True}}
    for bad in (["q_1"], ["=x"], ["q_1= "], ["q_1={oops"]):
        with pytest.raises(CLIError):
            parse_answers(bad)


def test_a_number_given_to_a_text_question_says_how_to_quote_it(setup):
    (setup.path / "note.yaml").write_text(TIMED.replace(", wait: 1", ""))
    setup.paused("N", "note.yaml")
    (entry,) = setup.journal("N")
    done = setup("resume", "N", "--answer", f"{entry.call_id}=7")
    assert_clean_failure(done, f"""quote it: --answer '{entry.call_id}="7"'""")
    quoted = setup("resume", "N", "--answer", f'{entry.call_id}="7"')
    assert quoted.returncode == 0, quoted.stdout + quoted.stderr
    assert setup.state("N")["note"] == "7"


def test_input_that_ends_at_the_question_leaves_it_waiting_and_the_run_paused(setup):
    question, call = setup.paused()
    done = answering("", "resume", "R", *setup.store, "--approve", "ask", env=setup.env)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "input ended: the questions not answered keep waiting" in done.stderr
    assert {step["id"] for step in setup.waiting()} == {question, call}


def test_the_run_desk_says_the_tree_asks_and_approve_all_takes_the_default(setup):
    (setup.path / "budget.yaml").write_text(
        "version: 1\nname: budget\nstate:\n  budget: {type: integer, default: 0}\nroot:\n"
        "  ask: {name: Budget, question: 'Budget?', schema: {type: integer, minimum: 1}, "
        "output: budget, default: 5}\n"
    )
    done = setup("run", setup.path / "budget.yaml", "--run-id", "B", "--approve", "all")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "The tree asks (step 'Budget'): Budget? [q_" in done.stderr
    assert "MCP server" not in done.stderr
    assert setup.state("B")["budget"] == 5

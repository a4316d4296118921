"""`jianmu_run(..., decisions=...)`: a tree whose guard holds calls for approval is testable.

Each held call is decided as the test says (by call id, else by tool name): approved, denied, or
left held (the run stops there). A held call the test gave no decision for fails the run at once,
naming the call (tool, call id, arguments), instead of waiting out the run's timeout.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from overlay_helpers import REPO

from jianmu_bt.testing.running import CallWaitsError, open_tree, run_tree

TREE = """\
version: 1
name: refunds
state:
  total: {type: string}
  double: {type: string}
tools: [calculator]
guard:
  approve: [calculator]
root:
  sequence:
    name: Main
    children:
      - tool: {name: Sum, tool: calculator, arguments: {expression: "6 * 7"}, output: total}
      - tool: {name: Double, tool: calculator, arguments: {expression: "2 * 21"}, output: double}
"""


@pytest.fixture
def held_tree(tmp_path: Path) -> Path:
    path = tmp_path / "refunds.yaml"
    path.write_text(TREE, encoding="utf-8")
    return path


def test_approving_by_tool_name_lets_every_held_call_run(jianmu_run, held_tree):
    run = jianmu_run(held_tree, decisions={"calculator": "approve"}, timeout=60)
    assert run.succeeded, run.reason
    assert run.state["total"] == "42" and run.state["double"] == "42"
    assert [c.tool for c in run.calls()] == ["calculator", "calculator"]
    assert run.held == []


def test_denying_a_call_fails_its_step_with_the_reason(jianmu_run, held_tree):
    run = jianmu_run(held_tree, decisions={"calculator": ("deny", "no sums today")}, timeout=60)
    assert not run.succeeded
    assert "no sums today" in run.reason
    assert run.calls() == []


AGENT_TREE = """\
version: 1
name: helper
state:
  answer: {type: string}
tools: [calculator]
llm:
  provider: scripted
  replies:
    - tool_calls:
        - {id: call_a, name: calculator, arguments: {expression: "1 + 1"}}
        - {id: call_b, name: calculator, arguments: {expression: "2 + 2"}}
    - "done"
guard:
  approve: [calculator]
root:
  agent: {name: Helper, goal: "Add", tools: [calculator], max_iterations: 3, output: answer}
"""


def test_a_call_id_decision_wins_over_the_tool_name(jianmu_run, tmp_path):
    path = tmp_path / "helper.yaml"
    path.write_text(AGENT_TREE, encoding="utf-8")
    decisions = {"calculator": "approve", "call_b": ("deny", "not this one")}
    run = jianmu_run(path, decisions=decisions, timeout=60)
    assert run.succeeded, run.reason
    assert [(c.call_id, c.ok) for c in run.calls("calculator")] == [("call_a", True)]
    assert {r["call_id"] for r in run.trace.refused()} == {"call_a", "call_b"}  # both held


def test_hold_stops_the_run_with_the_call_still_held(jianmu_run, held_tree):
    run = jianmu_run(held_tree, decisions={"calculator": "hold"}, timeout=60)
    assert run.status == "RUNNING" and run.result.run_status == "paused"
    assert [(r.tool, r.arguments) for r in run.held] == [("calculator", {"expression": "6 * 7"})]
    assert run.calls() == []


def test_a_call_waiting_without_a_decision_fails_at_once_naming_it(held_tree):
    tree = open_tree(held_tree)
    try:
        with pytest.raises(CallWaitsError) as raised:
            run_tree(tree, timeout=600)
    finally:
        tree.close()
    message = str(raised.value)
    assert "calculator" in message and "6 * 7" in message
    assert raised.value.call_id in message
    assert "decisions=" in message


def test_the_fixture_fails_the_test_naming_the_waiting_call(held_tree, tmp_path):
    test = tmp_path / "test_forgot.py"
    test.write_text(
        f"def test_forgot_the_decision(jianmu_run):\n    jianmu_run({str(held_tree)!r})\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "--rootdir", str(tmp_path), "-c", os.devnull, str(test)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "waits for a decision" in done.stdout and "'calculator'" in done.stdout
    assert "timed out" not in done.stdout


def test_an_unknown_decision_is_refused_before_the_run(jianmu_run, held_tree):
    with pytest.raises(ValueError, match="approve, deny or hold"):
        jianmu_run(held_tree, decisions={"calculator": "maybe"})

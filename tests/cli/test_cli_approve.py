"""`jianmu run --approve`: answering the guard's held calls from the command line."""

import subprocess
import sys

from cli_helpers import REPO, jianmu

HELD = """
version: 1
name: held
state:
  total: {type: string}
tools: [calculator]
guard: {approve: [calculator]}
root:
  tool: {name: Compute, tool: calculator, arguments: {expression: "6 * 7"}, output: total}
"""


def write_tree(tmp_path):
    path = tmp_path / "held.yaml"
    path.write_text(HELD)
    return path


def test_approve_all_lets_held_calls_run(tmp_path):
    result = jianmu("run", write_tree(tmp_path), "--approve", "all", "--timeout", "20")
    assert result.returncode == 0, result.stderr
    assert 'approved calculator({"expression": "6 * 7"})' in result.stderr
    assert "total = 42" in result.stdout


def test_without_a_terminal_held_calls_are_rejected_with_a_reason(tmp_path):
    result = jianmu("run", write_tree(tmp_path), "--timeout", "20")
    assert result.returncode == 1
    assert "no reviewer was available" in result.stdout
    assert "timed out" not in result.stdout  # answered at once, not left waiting


def test_ask_reads_the_answer_from_the_person(tmp_path):
    path = write_tree(tmp_path)
    outcomes = []
    for answer in ("y\n", "n\n"):
        finished = subprocess.run(
            [sys.executable, "-m", "jianmu_bt.cli", "run", str(path), "--approve", "ask"],
            input=answer,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO,
            env={
                "PYTHONPATH": str(REPO),
                "TERM": "dumb",
                "PATH": "/usr/bin:/bin",
                "JIANMU_STORE": str(tmp_path / "runs.db"),  # not the checkout's .jianmu/
            },
        )
        outcomes.append((finished.returncode, "approve calculator" in finished.stdout))
    assert outcomes == [(0, True), (1, True)]

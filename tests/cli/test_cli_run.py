"""`jianmu run`: summaries, --set, --json, --watch, --trace, --timeout, and user mistakes."""

import json
import os
import signal
import subprocess
import sys

import pytest
from cli_helpers import REPO, TREES, assert_clean_failure, jianmu

from jianmu_bt.cli import main

QUICKSTART = TREES / "quickstart.yaml"


def test_quickstart_runs_offline_and_summarises_what_happened():
    result = jianmu("run", QUICKSTART)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("Run of 'quickstart' finished: succeeded (run run_")
    assert "reason:" not in out  # a success has none
    assert "Sum: calculator -> 14" in out
    assert "SaveTotal: guard says deny to write_file" in out
    # The refusal is told once: not also as a failed call.
    assert "activity: 2 tool call(s) ok, 0 failed, 1 refused by the guard, 2 LLM replies" in out
    assert "write_file failed" not in out
    assert "  model:    scripted (replies written in the tree file, not a real model)" in out
    assert "Solver.llm: LLM asks for calculator" in out
    assert "State changes:\n  total = 14\n" in out
    assert "  answer = 17 * 23 = 391 (checked with the calculator)." in out
    assert "  saved =" not in out  # written, but to the value it already had


def test_set_values_are_yaml_and_json_output_reports_changes_and_state():
    result = jianmu("run", QUICKSTART, "--set", "numbers=6 * 7", "--set", "saved=false", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "succeeded" and report["tree"] == "quickstart"
    assert report["run_id"].startswith("run_")
    assert report["changed"]["total"] == "42"
    assert "numbers" not in report["changed"]  # inputs are applied before the "before" snapshot
    assert report["state"]["numbers"] == "6 * 7" and report["state"]["saved"] is False
    assert report["ticks"] > 0 and report["duration"] >= 0


def test_watch_without_a_terminal_prints_plain_snapshots_then_the_summary():
    result = jianmu("run", QUICKSTART, "--watch")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "\x1b" not in out
    assert out.index("-- Quickstart: running, tick 1") < out.index("-- Quickstart: finished")
    final = out[out.index("-- Quickstart: finished") :]
    assert "[+] Quickstart (sequence)" in final
    assert (
        "    [x] SaveTotal (tool: write_file) -- Error: the call to 'write_file' was refused"
        in final
    )
    assert "  [+] Solver (agent)" in final
    assert "  > SaveTotal: guard says deny to write_file" in out
    assert final.index("[+] Answered") < final.index("Run of 'quickstart' finished: succeeded")


def test_trace_records_the_layout_and_every_status_change(tmp_path):
    trace = tmp_path / "run.jsonl"
    result = jianmu("run", QUICKSTART, "--trace", trace)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert events[0]["type"] == "tree.nodes"
    assert [n["name"] for n in events[0]["nodes"][:3]] == ["Quickstart", "Sum", "TotalIsPositive"]
    assert events[-1]["type"] == "tree.finished" and events[-1]["status"] == "SUCCESS"
    finals = {e["node"]: e["new"] for e in events if e["type"] == "node.status"}
    assert finals["SaveTotal"] == "FAILURE" and finals["Quickstart"] == "SUCCESS"


def write_tree(tmp_path, root_yaml: str, state: str = "{}") -> str:
    path = tmp_path / "tree.yaml"
    path.write_text(f"version: 1\nname: t\nstate: {state}\ntools: [calculator]\nroot:\n{root_yaml}")
    return str(path)


def test_a_failing_tree_exits_1_with_its_reason(tmp_path):
    tree = write_tree(
        tmp_path,
        "  sequence:\n    children:\n"
        "      - tool: {name: Div, tool: calculator, arguments: {expression: '1/0'}, output: x}\n",
        "{x: string}",
    )
    result = jianmu("run", tree)
    assert result.returncode == 1
    assert "finished: failed" in result.stdout and "reason:   Div: Error:" in result.stdout
    assert "Traceback" not in result.stderr


def test_timeout_stops_a_tree_that_never_ends(tmp_path):
    tree = write_tree(
        tmp_path, "  behaviour: {name: Forever, class: 'py_trees.behaviours:Running'}\n"
    )
    result = jianmu("run", tree, "--timeout", "0.5", timeout=60)  # a hang guard, not a bound
    assert result.returncode == 1
    assert "reason:   the run timed out after 0.5s" in result.stdout


def test_ctrl_c_stops_the_run_with_status_130_and_no_traceback(tmp_path):
    tree = write_tree(
        tmp_path, "  behaviour: {name: Forever, class: 'py_trees.behaviours:Running'}\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "jianmu_bt.cli", "run", tree, "--watch"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As from a terminal, even when this test runs with SIGINT ignored (started with `&`).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert process.stdout.readline().startswith("-- Forever: running")  # the run has begun
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == 130
    assert err.strip() == "jianmu: interrupted"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "no/such/tree.yaml"], "no/such/tree.yaml: no such tree file"),
        (["run", str(TREES)], "is a directory, not a tree file"),
        (["run", str(QUICKSTART), "--set", "numbers"], "--set 'numbers': expected key=value"),
        (["run", str(QUICKSTART), "--set", "=3"], "expected key=value"),
        (["run", str(QUICKSTART), "--set", "nope=1"], "--set nope: the tree's state has no field"),
        (["run", str(QUICKSTART), "--set", "saved=[1, 2]"], "--set saved: invalid value"),
        (["run", str(QUICKSTART), "--set", "total={a: [1"], "--set total: the value '{a: [1'"),
        (["run", str(QUICKSTART), "--timeout", "0"], "--timeout 0: give a positive number"),
        (["run", str(QUICKSTART), "--trace", "/no/such/dir/t.jsonl"], "does not exist"),
    ],
)
def test_user_mistakes_are_one_clear_message_and_exit_1(argv, message, capsys):
    # In-process (same code path as the console script), to keep the suite fast.
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert message in captured.err and "Traceback" not in captured.err
    assert captured.out == ""


def test_mistakes_through_the_real_command_have_no_traceback(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        "version: 1\nroot:\n  sequence:\n    children:\n  - tool: {tool: calculator\n"
    )
    result = jianmu("run", broken)
    assert_clean_failure(result, f"{broken}:", "error:", "the tree was not loaded")
    assert_clean_failure(jianmu("run", QUICKSTART, "--set", "nope=1"), "no field 'nope'")


def test_a_missing_input_is_named(tmp_path):
    tree = write_tree(
        tmp_path,
        "  condition: {check: 'n > 1'}\n",
        "{n: {type: integer, input: true}}",
    )
    assert_clean_failure(jianmu("run", tree), "needs input(s): n (integer)", "--set n=")
    assert jianmu("run", tree, "--set", "n=2").returncode == 0


@pytest.mark.parametrize("command", ["run", "dot"])
def test_a_fifo_or_device_given_as_the_tree_is_refused_without_blocking(tmp_path, command):
    fifo = tmp_path / "tree.yaml"
    os.mkfifo(fifo)
    for target in (fifo, "/dev/zero"):
        result = jianmu(command, target, timeout=60)  # a hang would hit the timeout
        assert result.returncode == 1
        assert "not a regular file" in result.stderr and "Traceback" not in result.stderr

"""Every example script and every shipped tree runs offline and does what it says."""

import json
import subprocess
import sys

from cli_helpers import EXAMPLES, REPO, TREES, jianmu


def run_example(name: str) -> str:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_every_example_is_tested_here():
    tested = {
        "tools_quickstart.py",
        "tick_step_by_step.py",
        "subscribe_to_events.py",
        "inputs_and_state.py",
        "tree_in_python.py",
        "durable_run.py",  # run by tests/durable/test_durability_docs.py
    }
    assert {p.name for p in EXAMPLES.glob("*.py")} <= tested


def test_tools_quickstart_shows_schemas_and_call_results():
    out = run_example("tools_quickstart.py")
    assert "tools: ['calculator', 'convert_currency']" in out
    assert "c2 calculator: ok=True -> 391" in out and "c4 no_such_tool: ok=False" in out


def test_tick_step_by_step_shows_each_change_until_success():
    out = run_example("tick_step_by_step.py")
    ticks = [line for line in out.splitlines() if line.startswith("-- tick ")]
    assert ticks[0] == "-- tick 1: root is RUNNING" and ticks[-1].endswith("root is SUCCESS")
    assert "    [x] SaveTotal (tool: write_file)" in out
    assert out.rstrip().endswith(
        "total = 14, answer = '17 * 23 = 391 (checked with the calculator).'"
    )


def test_subscribe_to_events_sees_tools_guard_and_llm():
    out = run_example("subscribe_to_events.py")
    assert "guard.decision       deny write_file" in out
    assert "tool.call.completed  calculator: 391" in out
    assert "llm.response         asks for ['calculator']" in out
    assert "  Quickstart: RUNNING -> SUCCESS" in out
    assert out.rstrip().splitlines()[-1].startswith("finished: SUCCESS; events seen:")


def test_inputs_and_state_refuses_bad_inputs_then_reads_the_result():
    out = run_example("inputs_and_state.py").splitlines()
    assert out[0].startswith("refused: tree 'pricing' needs input(s): price (number)")
    assert out[1].startswith("refused: invalid value for state field 'price'")
    assert out[2:5] == ["status: SUCCESS", "total: 60.0", "label: 4 x 12.5 + VAT = 60.0"]


def test_tree_in_python_builds_the_quickstart_without_yaml():
    out = run_example("tree_in_python.py")
    assert out.startswith("status: SUCCESS after ")
    assert "total = 14, answer = '17 * 23 = 391'" in out
    assert 'digraph "quickstart (Python)" {' in out and "cluster_agent0" in out


def run_json(*args, cwd=None) -> dict:
    result = jianmu("run", *args, "--json", cwd=cwd)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)


def test_file_audit_finds_markers_and_secrets_in_a_project(tmp_path):
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "app.py").write_text(
        "def main():\n    # TODO: handle errors\n    return 1\n"
    )
    (project / "pkg" / "db.py").write_text('PASSWORD = "hunter2hunter2"\n# FIXME: pool size\n')
    (project / "README.md").write_text("# TODO in a README is not Python\n")
    report = run_json(TREES / "file_audit.yaml", cwd=project)
    state = report["state"]
    assert sorted(state["python_files"]["matches"]) == ["pkg/app.py", "pkg/db.py"]
    assert sorted(state["markers"]["matches"]) == [
        "pkg/app.py:2:     # TODO: handle errors",
        "pkg/db.py:2: # FIXME: pool size",
    ]
    assert state["secrets"]["matches"] == ['pkg/db.py:1: PASSWORD = "hunter2hunter2"']
    assert state["verdict"] == "hard-coded secrets found: move them out before release"
    assert state["report"].startswith("Audit of '.'. Secrets: hard-coded secrets found")
    assert "Fix the FIXME markers first" in state["review"]


def test_file_audit_of_a_clean_folder_keeps_the_default_verdict(tmp_path):
    (tmp_path / "ok.py").write_text("print('fine')\n")
    state = run_json(TREES / "file_audit.yaml", cwd=tmp_path)["state"]
    assert state["verdict"] == "no hard-coded secrets found" and state["markers"]["matches"] == []


def test_file_audit_fails_clearly_when_there_is_nothing_to_audit(tmp_path):
    result = jianmu("run", TREES / "file_audit.yaml", cwd=tmp_path)
    assert result.returncode == 1
    assert "reason:   HasPythonFiles:" in result.stdout


def test_research_and_summarise_answers_from_the_docs_with_sources():
    state = run_json(TREES / "research_and_summarise.yaml")["state"]
    assert "docs/guard.md" in state["sources"]["matches"]
    assert "strictest one wins" in state["findings"]
    assert state["summary"].startswith("Q: How does the guard decide")
    reads = [m for m in state["messages"] if m["role"] == "tool" and m["name"] == "read_file"]
    assert reads and reads[0]["content"].startswith("# Guard")


def test_research_and_summarise_runs_under_watch():
    # (quickstart under --watch is covered in test_cli_run.py)
    result = jianmu("run", TREES / "research_and_summarise.yaml", "--watch")
    assert result.returncode == 0 and "-- Research: finished, tick" in result.stdout
    assert "  > Researcher.tools: read_file -> # Guard" in result.stdout


def test_support_desk_hands_off_asks_an_agent_tool_and_files_a_typed_ticket():
    state = run_json(TREES / "support_desk.yaml")["state"]
    assert state["ticket"] == {"order": "A17", "category": "billing", "refund_eur": 49.9,
                               "resolved": True}  # fmt: skip
    tools = [m.get("content") for m in state["messages"] if m["role"] == "tool"]
    assert tools == ["Transferred to Billing.", "The refund is 49.9 EUR."]
    assert state["usage"]["requests"] == 6  # the accountant's two count in the run's usage

"""The summary `jianmu run` and `jianmu resume` print: a run id only when the run can be looked
up, where an overlay run's replies come from, no empty reason line, no built-in state fields
among the changes, and after a resume only what the resumed run changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import EXAMPLES, TREES

from jianmu_bt.cli import main

QUICKSTART = TREES / "quickstart.yaml"
RESEARCH = EXAMPLES / "testing" / "research.yaml"
RESEARCH_OVERLAY = EXAMPLES / "testing" / "research.overlay.yaml"

#: A state field written before a held call, so a resume replays it.
PAY_TREE = """\
version: 1
name: pay
state:
  note: {type: string}
  total: {type: string}
tools: [calculator]
guard: {approve: [calculator]}
root:
  sequence:
    name: Pay
    children:
      - set: {name: Note, values: {note: written before the hold}}
      - tool: {name: Sum, tool: calculator, output: total, arguments: {expression: "2 + 3"}}
"""


def jianmu(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """`jianmu ARGS` in this process: exit status, stdout, stderr."""
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every command runs in a fresh folder."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_run_without_a_store_prints_no_run_id_to_look_up(capsys):
    code, out, err = jianmu(capsys, "run", QUICKSTART, "--no-store")
    assert code == 0, err
    assert out.startswith("Run of 'quickstart' finished: succeeded (not recorded)\n")
    assert "run_" not in out.splitlines()[0]
    code, out, err = jianmu(capsys, "run", QUICKSTART, "--no-store", "--json")
    report = json.loads(out)
    assert report["run_id"] is None and report["recorded"] is False


def test_a_recorded_run_prints_the_id_runs_show_knows(capsys):
    code, out, err = jianmu(capsys, "run", QUICKSTART, "--store", "runs.db", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["recorded"] is True and report["run_id"].startswith("run_")
    code, out, err = jianmu(capsys, "runs", "show", report["run_id"], "--store", "runs.db")
    assert code == 0, err
    code, out, err = jianmu(capsys, "run", QUICKSTART, "--store", "runs.db", "--run-id", "q1")
    assert out.startswith("Run of 'quickstart' finished: succeeded (run q1)\n")


def test_an_overlay_run_says_its_replies_come_from_the_overlay_and_is_not_recorded(capsys):
    code, out, err = jianmu(capsys, "run", RESEARCH, "--overlay", RESEARCH_OVERLAY)
    assert code == 0, err
    assert out.startswith("Run of 'research' finished: succeeded (not recorded)\n")
    assert "written in the tree file" not in out
    assert (
        "  model:    replayed (replies from the overlay file research.overlay.yaml, "
        "not a real model)" in out
    )
    code, out, err = jianmu(capsys, "run", RESEARCH, "--overlay", RESEARCH_OVERLAY, "--json")
    report = json.loads(out)
    assert report["run_id"] is None and report["recorded"] is False


def test_an_overlay_without_llm_replies_leaves_the_tree_files_model(capsys, tmp_path):
    overlay = tmp_path / "tools.overlay.yaml"
    overlay.write_text("version: 1\ntools:\n  calculator: {result: '99'}\n")
    code, out, err = jianmu(capsys, "run", QUICKSTART, "--overlay", overlay)
    assert code == 0, err
    assert "  model:    scripted (replies written in the tree file, not a real model)" in out


def test_a_successful_run_has_no_reason_line_and_a_failed_one_has(capsys, tmp_path):
    code, out, err = jianmu(capsys, "run", QUICKSTART, "--no-store")
    assert code == 0, err
    assert "reason:" not in out
    tree = tmp_path / "div.yaml"
    tree.write_text(
        "version: 1\nname: div\nstate: {x: {type: string}}\ntools: [calculator]\nroot:\n"
        "  tool: {name: Div, tool: calculator, arguments: {expression: '1/0'}, output: x}\n"
    )
    code, out, err = jianmu(capsys, "run", tree, "--no-store")
    assert code == 1
    assert "\n  reason:   Div: Error:" in out


def test_built_in_state_fields_are_not_listed_as_changes(capsys):
    code, out, err = jianmu(capsys, "run", QUICKSTART, "--no-store")
    assert code == 0, err
    changes = out[out.index("State changes:") :]
    assert changes.startswith("State changes:\n  total = 14\n")
    assert "  answer = 17 * 23 = 391 (checked with the calculator)." in changes
    for builtin in ("messages", "usage", "guard", "actions", "tool_effects", "final_answer"):
        assert f"  {builtin} =" not in changes, builtin
    # The LLM's usage keeps its own short line.
    assert "  usage:    2 LLM request(s)" in out
    code, out, err = jianmu(capsys, "run", QUICKSTART, "--no-store", "--json")
    report = json.loads(out)
    assert sorted(report["changed"]) == ["answer", "total"]
    assert report["state"]["messages"]  # the whole state still has them


def test_after_a_resume_only_what_the_resumed_run_changed_is_listed(capsys, tmp_path):
    (tmp_path / "pay.yaml").write_text(PAY_TREE)
    common = ("--store", "runs.db")
    code, out, err = jianmu(
        capsys, "run", "pay.yaml", "--approve", "later", "--run-id", "r1", *common
    )
    assert code == 3, err
    assert "State changes:\n  note = written before the hold\n" in out
    code, out, err = jianmu(capsys, "resume", "r1", "--approve", "all", *common)
    assert code == 0, err
    changes = out[out.index("State changes:") :]
    assert changes == "State changes:\n  total = 5\n"
    code, out, err = jianmu(capsys, "resume", "r1", "--approve", "all", *common)
    assert code == 1  # (already succeeded)


def test_after_a_resume_the_json_changes_are_the_resumed_runs_own(capsys, tmp_path):
    (tmp_path / "pay.yaml").write_text(PAY_TREE)
    common = ("--store", "runs.db")
    jianmu(capsys, "run", "pay.yaml", "--approve", "later", "--run-id", "r2", *common)
    code, out, err = jianmu(capsys, "resume", "r2", "--approve", "all", "--json", *common)
    assert code == 0, err
    report = json.loads(out)
    assert report["changed"] == {"total": "5"}
    assert report["recorded"] is True and report["run_id"] == "r2"
    assert report["state"]["note"] == "written before the hold"

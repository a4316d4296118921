"""Questions for a person (`ask`) and external tools' calls: a durable run pauses on them, takes
their values from a resume (checked against their schemas, journaled once), or from a desk in
its own process; deadlines give defaults; kill -9 neither loses an answer nor applies it twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from durable_helpers import REPO

from jianmu_bt import load_tree
from jianmu_bt.runtime.durable import DurableRunError
from jianmu_bt.store import open_store

TOOLS = '''
import os, time
from jianmu_bt.tools import tool
from jianmu_bt.tools.external import ExternalTool

ci_result = ExternalTool(
    "ci_result",
    "Run CI on a branch; the verdict comes back later.",
    parameters={"type": "object", "properties": {"branch": {"type": "string"}},
                "required": ["branch"]},
    output_schema={"type": "object", "properties": {"passed": {"type": "boolean"}},
                   "required": ["passed"]},
)


@tool(read_only=True)
def pause_here() -> str:
    """Signal that the step began, then wait as long as HANG_SECONDS says."""
    ready = os.environ.get("READY")
    if ready:
        open(ready, "w").close()
    time.sleep(float(os.environ.get("HANG_SECONDS", "0")))
    return "went on"


@tool
def record(plan: str) -> str:
    """Append the plan to the ledger (a side effect counted by the test)."""
    with open(os.environ["LEDGER"], "a") as ledger:
        ledger.write(plan + "\\n")
    return plan
'''

TREE = """
version: 1
name: release
tools: ["tools:ci_result", "tools:pause_here", "tools:record"]
state:
  topic: {type: string, default: "the launch"}
  plan: {type: string}
  budget: {type: integer, default: 0}
  verdict: {type: dict, default: {}}
root:
  sequence:
    children:
      - ask: {name: PickPlan, question: "Which plan for {topic}?", choices: [careful, fast],
              output: plan}
      - tool: {tool: pause_here}
      - tool: {tool: record, arguments: {plan: "{plan}"}}
      - tool: {tool: ci_result, arguments: {branch: main}, output: verdict}
"""


@pytest.fixture
def tree_file(tmp_path, monkeypatch):
    (tmp_path / "tools.py").write_text(TOOLS)
    path = tmp_path / "release.yaml"
    path.write_text(TREE)
    monkeypatch.setenv("LEDGER", str(tmp_path / "ledger"))
    monkeypatch.setenv("HANG_SECONDS", "0")
    monkeypatch.delenv("READY", raising=False)
    return path


def _waiting(db, run_id="R"):
    with open_store(db, create=False) as store:
        return [e for e in store.journal(run_id) if e.status == "waiting"]


def _rows(db, run_id="R"):
    with open_store(db, create=False) as store:
        return [(e.tool, e.status) for e in store.journal_log(run_id)]


def _ledger(tmp_path):
    path = tmp_path / "ledger"
    return path.read_text().split() if path.exists() else []


def test_a_question_and_an_external_call_pause_the_run_until_a_resume_brings_their_values(
    tree_file, tmp_path
):
    db = tmp_path / "runs.db"
    result = load_tree(tree_file).run(store=db, run_id="R")
    assert result.run_status == "paused"
    (question,) = _waiting(db)
    assert question.tool == "ask" and question.call_id.startswith("q_")
    assert question.result["question"] == "Which plan for the launch?"
    assert "waits for an answer" in result.reason

    tree = load_tree(tree_file)
    with pytest.raises(DurableRunError, match="answer: 'slow' is not one of"):
        tree.resume("R", store=db, answers={question.call_id: "slow"})
    assert [e.call_id for e in _waiting(db)] == [question.call_id]  # still open

    tree = load_tree(tree_file)
    result = tree.resume("R", store=db, answers={question.call_id: "fast"}, by="ann")
    assert result.run_status == "paused"  # now on the external call
    (call,) = _waiting(db)
    assert call.tool == "ci_result" and call.arguments == {"branch": "main"}
    assert _ledger(tmp_path) == ["fast"]

    with pytest.raises(DurableRunError, match="already has its value"):
        load_tree(tree_file).resume("R", store=db, answers={question.call_id: "careful"})
    with pytest.raises(DurableRunError, match=r"result\.passed: 'yes' is not of type 'boolean'"):
        load_tree(tree_file).resume("R", store=db, results={call.call_id: {"passed": "yes"}})
    with pytest.raises(DurableRunError, match="no external call 'call_nope' waiting"):
        load_tree(tree_file).resume("R", store=db, results={"call_nope": {"passed": True}})

    tree = load_tree(tree_file)
    result = tree.resume("R", store=db, results={call.call_id: {"passed": True}}, by="ci")
    assert result.run_status == "succeeded"
    assert result.state["plan"] == "fast" and result.state["verdict"] == {"passed": True}
    assert _ledger(tmp_path) == ["fast"]  # the answer applied once, the step not run again
    with open_store(db, create=False) as store:
        log = store.journal_log("R")
    done = [e.result for e in log if e.status == "done" and e.result.get("by")]
    assert [(d["tool"], d["by"]) for d in done] == [("ask", "ann"), ("ci_result", "ci")]
    with pytest.raises(DurableRunError, match="already succeeded"):
        load_tree(tree_file).resume("R", store=db, results={call.call_id: {"passed": True}})


def test_an_answer_for_another_runs_question_is_refused(tree_file, tmp_path):
    db = tmp_path / "runs.db"
    load_tree(tree_file).run(store=db, run_id="R")
    load_tree(tree_file).run({"topic": "other"}, store=db, run_id="S")
    (other,) = _waiting(db, "S")
    (mine,) = _waiting(db, "R")
    assert other.call_id == mine.call_id  # the same step of the same tree: ids repeat per run
    with pytest.raises(DurableRunError, match="run R has no question 'q_elsewhere' waiting"):
        load_tree(tree_file).resume("R", store=db, answers={"q_elsewhere": "fast"})


def test_answers_are_data_control_characters_and_all(tmp_path):
    tree_file = tmp_path / "free.yaml"
    tree_file.write_text(
        "state: {note: {type: string}}\nroot: {ask: {question: 'Anything to add?', output: note}}\n"
    )
    db = tmp_path / "runs.db"
    load_tree(tree_file).run(store=db, run_id="R")
    (question,) = _waiting(db)
    hostile = "ok\x1b[2J\u202eevil\r\nrm -rf /"
    result = load_tree(tree_file).resume("R", store=db, answers={question.call_id: hostile})
    assert result.ok and result.state["note"] == hostile  # kept exactly; desks escape on show


def test_attended_questions_and_results_are_answered_in_the_process_and_journaled_once(
    tree_file, tmp_path
):
    db = tmp_path / "runs.db"
    tree = load_tree(tree_file)
    asked = []

    def answer(question):
        asked.append(question)
        tree.answer(question.id, "accept", {"answer": "careful"}, by="desk")

    def supply():
        while not tree.pending_results():
            time.sleep(0.01)
        (call,) = tree.pending_results()
        with pytest.raises(ValueError, match="does not fit"):
            tree.supply_result(call.call_id, {"passed": 1})
        tree.supply_result(call.call_id, {"passed": False}, by="webhook")

    supplier = threading.Thread(target=supply)
    supplier.start()
    with tree.attend_questions(answer), tree.attend_results():
        result = tree.run(store=db, run_id="R")
    supplier.join(10)
    assert result.run_status == "succeeded", result.reason
    assert result.state["plan"] == "careful" and result.state["verdict"] == {"passed": False}
    assert [q.source for q in asked] == ["tree"]
    assert asked[0].schema["properties"]["answer"]["enum"] == ["careful", "fast"]
    assert _rows(db).count(("ask", "done")) == 1 and _rows(db).count(("ci_result", "done")) == 1
    assert tree.pending_results() == [] and tree.pending_questions() == []


def test_without_a_store_nobody_attending_means_the_default_or_a_failure(tmp_path):
    tree_file = tmp_path / "t.yaml"
    tree_file.write_text(
        "state: {plan: {type: string}, n: {type: integer, default: 0}}\n"
        "root:\n  sequence:\n    children:\n"
        "      - ask: {question: 'n?', schema: {type: integer}, output: n, default: 7}\n"
        "      - ask: {question: 'Plan?', choices: [a, b], output: plan}\n"
    )
    result = load_tree(tree_file).run()
    assert result.run_status == "failed"
    assert "nobody attends the run's questions" in result.reason
    assert result.state["n"] == 7


def test_a_deadline_gives_the_default_and_refuses_a_late_value(tmp_path):
    tree_file = tmp_path / "t.yaml"
    tree_file.write_text(
        "state: {n: {type: integer, default: 0}, plan: {type: string}}\n"
        "root:\n  sequence:\n    children:\n"
        "      - ask: {question: 'n?', schema: {type: integer}, output: n, default: 7, wait: 0.2}\n"
        "      - ask: {question: 'Plan?', choices: [a, b], output: plan, wait: 0.2}\n"
    )
    db = tmp_path / "runs.db"
    assert load_tree(tree_file).run(store=db, run_id="R").run_status == "paused"
    (first,) = _waiting(db)
    assert first.result["deadline"] > time.time() - 1 and first.result["default"] == [7]
    while time.time() < first.result["deadline"]:
        time.sleep(0.05)
    with pytest.raises(DurableRunError, match="timed out before this value came"):
        load_tree(tree_file).resume("R", store=db, answers={first.call_id: 3})
    result = load_tree(tree_file).resume("R", store=db)  # the default, then the next question
    assert result.run_status == "paused" and result.state["n"] == 7
    (second,) = _waiting(db)
    while time.time() < second.result["deadline"]:
        time.sleep(0.05)
    result = load_tree(tree_file).resume("R", store=db)
    assert result.run_status == "failed"
    assert "got no value before its timeout" in result.reason


def test_an_agent_waits_for_an_external_tools_result_and_reads_it(tmp_path):
    (tmp_path / "tools.py").write_text(TOOLS)
    tree_file = tmp_path / "agent.yaml"
    tree_file.write_text(
        """
tools: ["tools:ci_result"]
llm:
  provider: scripted
  replies:
    - tool_calls: [{name: ci_result, arguments: {branch: dev}}]
    - "CI passed on dev."
state: {answer: {type: string}}
root:
  agent: {goal: "Check CI on dev", output: answer}
"""
    )
    db = tmp_path / "runs.db"
    assert load_tree(tree_file).run(store=db, run_id="R").run_status == "paused"
    (call,) = _waiting(db)
    assert (call.tool, call.arguments) == ("ci_result", {"branch": "dev"})
    tree = load_tree(tree_file)
    result = tree.resume("R", store=db, results={call.call_id: {"passed": True}})
    assert result.run_status == "succeeded", result.reason
    messages = result.state["messages"]
    assert any('"passed": true' in str(m.get("content")) for m in messages if m["role"] == "tool")


SCRIPT = """
import sys
from jianmu_bt import load_tree
tree = load_tree(sys.argv[1])
mode = sys.argv[3]

def on_question(question):
    if mode == "answer":
        tree.answer(question.id, "accept", {"answer": "fast"}, by="script")
    else:
        open(sys.argv[4], "w").close()  # asked: the test kills the process now

with tree.attend_questions(on_question):
    tree.run(store=sys.argv[2], run_id="R")
"""


def _start(tmp_path, tree_file, mode, ready):
    script = tmp_path / "drive.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}", "READY": str(ready)}
    env["HANG_SECONDS"] = "120"
    return subprocess.Popen(
        [sys.executable, str(script), str(tree_file), str(tmp_path / "runs.db"), mode, str(ready)],
        env=env,
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )


def _kill_when(process, ready: Path):
    deadline = time.monotonic() + 60
    while not ready.exists():
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline, "the driver never reached the point"
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait(10)


def test_kill_9_after_the_answer_neither_loses_it_nor_applies_it_twice(tree_file, tmp_path):
    ready = tmp_path / "ready"
    process = _start(tmp_path, tree_file, "answer", ready)
    _kill_when(process, ready)  # killed in the step after the answer
    db = tmp_path / "runs.db"
    assert ("ask", "done") in _rows(db)
    result = load_tree(tree_file).resume("R", store=db)  # nobody attends: a new ask would pause
    assert result.run_status == "paused" and "ci_result" in result.reason
    assert result.state["plan"] == "fast" and _ledger(tmp_path) == ["fast"]
    assert _rows(db).count(("ask", "done")) == 1 and _rows(db).count(("ask", "waiting")) == 1


def test_kill_9_while_a_question_is_asked_leaves_it_waiting_for_a_resume(tree_file, tmp_path):
    ready = tmp_path / "ready"
    process = _start(tmp_path, tree_file, "hold", ready)
    _kill_when(process, ready)  # killed while the question is on the desk
    db = tmp_path / "runs.db"
    (question,) = _waiting(db)
    result = load_tree(tree_file).resume("R", store=db, answers={question.call_id: "careful"})
    assert result.run_status == "paused" and result.state["plan"] == "careful"
    assert _ledger(tmp_path) == ["careful"]


PYTHON_TREE = """
import py_trees
from pydantic import BaseModel

from jianmu_bt import PythonTree, StateManager
from jianmu_bt.nodes import Ask, ToolNode
from jianmu_bt.tools import ExternalTool

deploy = ExternalTool(
    "deploy",
    "Deploy a version; the release system reports the outcome.",
    parameters={"type": "object", "properties": {"version": {"type": "string"}}},
    output_schema={"type": "string", "enum": ["live", "rolled back"]},
)


class Release(BaseModel):
    version: str = ""
    outcome: str = ""


def build():
    return py_trees.composites.Sequence("Release", memory=True, children=[
        Ask("AskVersion", "Which version?", {"type": "string", "enum": ["1.0", "1.1"]}, "version"),
        ToolNode(deploy, name="Deploy", arguments={"version": "{version}"}, output_key="outcome"),
    ])


def release_tree():
    return PythonTree("release", build, StateManager(Release), source="release_flow:release_tree")
"""


def _python(tmp_path, code: str) -> str:
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_python_tree_asks_and_waits_across_processes(tmp_path):
    (tmp_path / "release_flow.py").write_text(PYTHON_TREE)
    db = tmp_path / "runs.db"
    start = "from release_flow import release_tree\n"
    out = _python(
        tmp_path, start + f"print(release_tree().run(store={str(db)!r}, run_id='R').run_status)"
    )
    assert out == "paused"
    (question,) = _waiting(db)
    answer = f"answers={{{question.call_id!r}: '1.1'}}"
    out = _python(
        tmp_path,
        start + f"print(release_tree().resume('R', store={str(db)!r}, {answer}).run_status)",
    )
    assert out == "paused"
    (call,) = _waiting(db)
    assert (call.tool, call.result["arguments"]) == ("deploy", {"version": "1.1"})
    result = f"results={{{call.call_id!r}: 'live'}}"
    code = start + f"r = release_tree().resume('R', store={str(db)!r}, {result})\n"
    out = _python(tmp_path, code + "print(r.run_status, r.state['version'], r.state['outcome'])")
    assert out == "succeeded 1.1 live"


EXTERNAL_SCRIPT = """
import sys
from jianmu_bt import load_tree
tree = load_tree(sys.argv[1])
with tree.attend_questions(lambda q: tree.answer(q.id, "accept", {"answer": "fast"})):
    with tree.attend_results():
        tree.events.subscribe(
            lambda e: e.type == "tool.call.waiting" and open(sys.argv[3], "w").close()
        )
        tree.run(store=sys.argv[2], run_id="R")
"""


def test_kill_9_while_an_external_call_waits_in_process_keeps_it_waiting(tree_file, tmp_path):
    script = tmp_path / "drive_external.py"
    script.write_text(EXTERNAL_SCRIPT)
    ready, db = tmp_path / "ready", tmp_path / "runs.db"
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}"}
    process = subprocess.Popen(
        [sys.executable, str(script), str(tree_file), str(db), str(ready)],
        env=env,
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    _kill_when(process, ready)
    (call,) = _waiting(db)
    assert call.tool == "ci_result"
    result = load_tree(tree_file).resume("R", store=db, results={call.call_id: {"passed": True}})
    assert result.run_status == "succeeded" and result.state["verdict"] == {"passed": True}
    assert _ledger(tmp_path) == ["fast"]  # the step before ran once, before the kill

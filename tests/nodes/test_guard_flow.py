"""The guard inside the executor: refusals the LLM can read, pending batches, approvals, resume."""

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from jianmu_bt import ToolCall, tool
from jianmu_bt.guard import GuardEnforcer
from jianmu_bt.nodes import ToolExecutor
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner

ran = []


@tool(effect_tags=["http"])
def fetch(url: str) -> str:
    """Fetch."""
    ran.append(("fetch", url))
    return f"page {url}"


@tool(parallel_safe=False, effect_tags=["exec"])
def shell(cmd: str) -> str:
    """Run a command."""
    ran.append(("shell", cmd))
    return "done"


def setup(config, calls):
    ran.clear()
    state = StateManager(AgentState)
    state.set("actions", ToolCall.from_list(calls))
    guard = GuardEnforcer.from_config(config)
    runner = TreeRunner(ToolExecutor([fetch, shell]), state, services={"guard": guard})
    return runner, guard, state


def test_denied_call_is_an_observation_and_siblings_run():
    runner, _, _ = setup(
        {"deny": ["shell"]},
        [
            {"id": "a", "name": "shell", "arguments": {"cmd": "rm -rf /"}},
            {"id": "b", "name": "fetch", "arguments": {"url": "x"}},
        ],
    )
    events = []
    runner.events.subscribe(events.append)
    result = runner.run()
    denied, fetched = result.state["messages"]
    assert denied["tool_call_id"] == "a" and "refused by policy deny_list" in denied["content"]
    assert fetched["content"] == "page x"
    assert ran == [("fetch", "x")]
    assert any(e.type == "guard.decision" and e.data["decision"] == "deny" for e in events)


def test_confirm_tells_the_llm_to_ask_the_user():
    runner, _, _ = setup(
        {"confirm": ["shell"]}, [{"id": "a", "name": "shell", "arguments": {"cmd": "ls"}}]
    )
    result = runner.run()
    assert "needs the user's confirmation" in result.state["messages"][0]["content"]
    assert ran == []


def test_budget_refuses_calls_beyond_it_within_one_batch():
    runner, _, _ = setup(
        {"budgets": {"http": 2}},
        [{"name": "fetch", "arguments": {"url": str(i)}} for i in range(3)],
    )
    result = runner.run()
    contents = [m["content"] for m in result.state["messages"]]
    assert contents[:2] == ["page 0", "page 1"] and "Error:" in contents[2]
    assert result.state["tool_effects"] == {"http": 2}


def test_pending_holds_the_batch_until_approved_from_another_thread():
    runner, guard, state = setup(
        {"approve": ["shell"]},
        [
            {"id": "a", "name": "fetch", "arguments": {"url": "x"}},
            {"id": "b", "name": "shell", "arguments": {"cmd": "deploy"}},
        ],
    )

    def reviewer():
        deadline = time.monotonic() + 5
        while not guard.approvals.pending() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ran == []  # nothing in the held batch ran before the decision
        guard.approvals.approve("b")

    thread = threading.Thread(target=reviewer)
    thread.start()
    result = runner.run(timeout=10)
    thread.join()
    assert result.ok
    assert sorted(ran) == [("fetch", "x"), ("shell", "deploy")]
    assert state.get("guard")["approvals"]["records"][0]["status"] == "approved"


def test_each_held_call_is_announced_once_while_the_batch_waits():
    runner, guard, state = setup(
        {"approve": ["shell"]},
        [
            {"id": "b", "name": "shell", "arguments": {"cmd": "one"}},
            {"id": "c", "name": "shell", "arguments": {"cmd": "two"}},
        ],
    )
    pending = []
    runner.events.subscribe(
        lambda e: (
            pending.append(e.data["call_id"])
            if e.type == "guard.decision" and e.data["decision"] == "pending"
            else None
        )
    )

    def saved_status(call_id):
        records = (state.get("guard") or {}).get("approvals", {}).get("records", [])
        return next((r["status"] for r in records if r["call_id"] == call_id), None)

    def reviewer():
        deadline = time.monotonic() + 10
        while len(pending) < 2 and time.monotonic() < deadline:
            time.sleep(0.005)
        guard.approvals.approve("b")
        # The executor looks again (c is still held) and saves the guard: then decide c.
        while saved_status("b") != "approved" and time.monotonic() < deadline:
            time.sleep(0.005)
        guard.approvals.approve("c")

    thread = threading.Thread(target=reviewer)
    thread.start()
    result = runner.run(timeout=10)
    thread.join()
    assert result.ok and sorted(ran) == [("shell", "one"), ("shell", "two")]
    assert sorted(pending) == ["b", "c"]  # the approval of b did not announce c again
    assert [r["status"] for r in state.get("guard")["approvals"]["records"]] == [
        "approved",
        "approved",
    ]


def test_rejected_call_reports_the_reviewers_reason():
    runner, guard, _ = setup(
        {"approve": ["shell"]}, [{"id": "b", "name": "shell", "arguments": {"cmd": "x"}}]
    )
    runner.events.subscribe(
        lambda e: (
            guard.approvals.reject("b", "not during business hours")
            if e.type == "guard.decision" and e.data["decision"] == "pending"
            else None
        )
    )
    result = runner.run(timeout=10)
    assert "not during business hours" in result.state["messages"][0]["content"]
    assert ran == []


def test_pause_snapshot_and_resume_in_a_new_process(tmp_path):
    script = Path(__file__).with_name("pause_resume_script.py")
    log, snapshot = tmp_path / "log.txt", tmp_path / "snapshot.json"
    subprocess.run(
        [sys.executable, str(script), "pause", str(log), str(snapshot)], check=True, timeout=60
    )
    assert json.loads(snapshot.read_text())["actions"][1]["id"] == "c2"
    assert not log.exists()  # the held batch ran nothing before the pause
    finished = subprocess.run(
        [sys.executable, str(script), "resume", str(log), str(snapshot)],
        check=True,
        timeout=60,
        capture_output=True,
        text=True,
    )
    outcome = json.loads(finished.stdout.strip().splitlines()[-1])
    assert outcome["status"] == "SUCCESS"
    assert [m["content"] for m in outcome["messages"]] == ["found x", "paid 5"]
    assert log.read_text().splitlines() == ["lookup x", "pay 5"]  # each call ran exactly once

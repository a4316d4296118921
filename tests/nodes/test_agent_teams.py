"""Agents working together: an agent offered to another as a tool, and agents handing one
conversation to each other; through Python and YAML, under the caller's guard, durably."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from jianmu_bt import tool
from jianmu_bt.guard import GuardEnforcer
from jianmu_bt.llm import ScriptedProvider
from jianmu_bt.llm.limits import UsageLimits
from jianmu_bt.loader import TreeLoadError, load_tree
from jianmu_bt.nodes import react_agent
from jianmu_bt.nodes.agent_tool import AgentTool
from jianmu_bt.nodes.handoff import HandoffAgent, handoff_agents
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner

REPO = Path(__file__).resolve().parents[2]


@tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"{topic}: 42"


@tool(effect_tags=["payment"])
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


def researcher(replies: list, **kw) -> AgentTool:
    return AgentTool(
        "researcher",
        "Researches a topic.",
        goal="Research: {task}",
        tools=[lookup, refund],
        provider=ScriptedProvider(replies),
        **kw,
    )


def lead(tools: list, replies: list):
    return react_agent("Lead", tools=tools, provider=ScriptedProvider(replies), goal="Go")


ASK = {"tool_calls": [{"name": "researcher", "arguments": {"task": "life"}}]}


def test_an_agent_tool_answers_with_its_own_conversation_and_usage_adds_up():
    inner = researcher(
        [
            {
                "tool_calls": [{"name": "lookup", "arguments": {"topic": "life"}}],
                "usage": {"input_tokens": 10, "output_tokens": 5},
            },
            "It is 42.",
        ]
    )
    runner = TreeRunner(lead([inner], [ASK, "42."]), StateManager(AgentState))
    events = []
    runner.context.events.subscribe(events.append)
    result = runner.run(timeout=10)
    assert result.ok, result.reason
    tool_message = result.state["messages"][2]
    assert tool_message["content"] == "It is 42."
    assert len(result.state["messages"]) == 4  # the inner conversation is the agent's own
    assert result.state["usage"]["requests"] == 4
    assert result.state["usage"]["input_tokens"] == 10
    inner_events = [e for e in events if e.data.get("agent") == "researcher"]
    assert [e.type for e in inner_events if e.type.startswith("llm.response")] == [
        "llm.response",
        "llm.response",
    ]


def test_the_callers_guard_is_a_floor_the_agent_tool_cannot_lower():
    inner = researcher(
        [{"tool_calls": [{"name": "refund", "arguments": {"order": "A1"}}]}, "Refund refused."],
        guard=GuardEnforcer.from_config({"allow": ["refund", "lookup"]}),
    )
    agent = lead([inner], [ASK, "done"])
    guard = GuardEnforcer.from_config({"deny": ["refund"]})
    result = TreeRunner(agent, StateManager(AgentState), services={"guard": guard}).run(timeout=10)
    assert result.ok, result.reason
    assert "refunded" not in str(result.state["messages"])


def test_an_agent_tool_that_fails_is_a_failed_call_saying_why():
    inner = researcher(
        [{"tool_calls": [{"name": "lookup", "arguments": {"topic": "x"}}]}] * 3,
        limits=UsageLimits(requests=2),
    )
    result = TreeRunner(lead([inner], [ASK, "gave up"]), StateManager(AgentState)).run(timeout=10)
    observation = result.state["messages"][2]["content"]
    assert observation.startswith("Error: the agent 'researcher' did not answer")
    assert "requests would reach 3" in observation


def test_an_agent_tool_checks_its_arguments():
    inner = researcher(["never"])
    bad = {"tool_calls": [{"name": "researcher", "arguments": {"topic": "x"}}]}
    result = TreeRunner(lead([inner], [bad, "ok"]), StateManager(AgentState)).run(timeout=10)
    assert "'task' is a required property" in result.state["messages"][2]["content"]


def test_an_agent_tool_from_yaml(tmp_path):
    text = textwrap.dedent("""
        version: 1
        tools:
          - calculator
          - agent:
              name: mathematician
              description: "Solves arithmetic with a calculator."
              goal: "Compute: {task}"
              tools: [calculator]
              llm:
                provider: scripted
                replies:
                  - {tool_calls: [{name: calculator, arguments: {expression: "17 * 23"}}]}
                  - "391"
        llm:
          provider: scripted
          replies:
            - {tool_calls: [{name: mathematician, arguments: {task: "17 * 23"}}]}
            - "17 * 23 is 391."
        root:
          agent: {goal: "What is 17 * 23?", tools: [mathematician]}
    """)
    result = load_tree(text).run(timeout=10)
    assert result.ok and result.state["final_answer"] == "17 * 23 is 391."
    assert result.state["messages"][2]["content"] == "391"
    with pytest.raises(TreeLoadError, match="unknown tool 'calculater'"):
        load_tree(text.replace("tools: [calculator]", "tools: [calculater]"))


def desk(triage: list, billing: list, **kw):
    return handoff_agents(
        "Desk",
        [
            HandoffAgent("Triage", "routes", system_prompt="Route.",
                         provider=ScriptedProvider(triage)),
            HandoffAgent("Billing", "refunds", system_prompt="Bill.", tools=[refund],
                         provider=ScriptedProvider(billing)),
        ],
        goal="Refund A1",
        **kw,
    )  # fmt: skip


TRANSFER = {"tool_calls": [{"name": "transfer_to_billing", "arguments": {}}]}


def test_a_handoff_passes_the_conversation_to_the_next_agent():
    billing = [{"tool_calls": [{"name": "refund", "arguments": {"order": "A1"}}]}, "Refunded."]
    tree = desk([TRANSFER], billing)
    result = TreeRunner(tree, StateManager(AgentState)).run(timeout=10)
    assert result.ok and result.state["final_answer"] == "Refunded."
    roles = [m["role"] for m in result.state["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert result.state["messages"][2]["content"] == "Transferred to Billing."


def test_too_many_handoffs_fail_the_group():
    back = {"tool_calls": [{"name": "transfer_to_triage", "arguments": {}}]}
    result = TreeRunner(desk([TRANSFER] * 3, [back] * 3, max_handoffs=3),
                        StateManager(AgentState)).run(timeout=10)  # fmt: skip
    assert not result.ok and "more than 3 hand-offs" in result.reason


HANDOFF_TREE = """
version: 1
tools: ["team_tools:refund"]
llm:
  provider: scripted
  replies:
    - {tool_calls: [{name: transfer_to_billing, arguments: {}}]}
    - {tool_calls: [{name: refund, arguments: {order: A1}}]}
    - "Order A1 is refunded."
root:
  handoff:
    name: Desk
    goal: "Refund order A1 please"
    agents:
      - {name: Triage, system_prompt: "Route the user.", handoffs: [Billing]}
      - {name: Billing, description: "refunds", system_prompt: "Bill.", tools: [refund]}
"""

TEAM_TOOLS = '''
import os, time
from pathlib import Path
from jianmu_bt import tool

@tool(idempotent=True, effect_tags=["payment"])
def refund(order: str) -> str:
    """Refund an order."""
    ledger = Path(os.environ["LEDGER"])
    with ledger.open("a") as out:
        out.write(f"refund {order}\\n")
    gate = Path(os.environ["GATE"])
    deadline = time.monotonic() + 60
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return f"refunded {order}"
'''


def test_unknown_handoff_targets_are_load_errors_where_they_are():
    bad = HANDOFF_TREE.replace("handoffs: [Billing]", "handoffs: [Biling]")
    with pytest.raises(TreeLoadError, match=r":\d+:\d+: error: agent 'Triage' hands off to"):
        load_tree(bad, tools=[refund])


def test_a_handoff_group_killed_mid_way_resumes_where_it_was(tmp_path):
    (tmp_path / "tree.yaml").write_text(HANDOFF_TREE)
    (tmp_path / "team_tools.py").write_text(textwrap.dedent(TEAM_TOOLS))
    ledger, gate, db = tmp_path / "ledger", tmp_path / "gate", tmp_path / "runs.db"
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}", "LEDGER": str(ledger),
           "GATE": str(gate), "TERM": "dumb"}  # fmt: skip
    command = [sys.executable, "-m", "jianmu_bt.cli"]
    first = subprocess.Popen([*command, "run", "tree.yaml", "--store", str(db), "--run-id", "R"],
                             env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 60
    while not ledger.exists():
        assert first.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    first.send_signal(signal.SIGKILL)  # inside Billing's refund, after the hand-off
    first.wait(timeout=10)
    gate.touch()
    resumed = subprocess.run([*command, "resume", "R", "--store", str(db), "--approve", "all"],
                             env=env, cwd=tmp_path, capture_output=True, text=True,
                             timeout=90)  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "Order A1 is refunded." in resumed.stdout
    # The hand-off and Billing's request came from the journal; the idempotent refund ran again
    # with the same key (the ledger line is the tool's own: it records each run).
    assert ledger.read_text().splitlines() == ["refund A1", "refund A1"]


def test_a_handoff_the_guard_refuses_does_not_happen():
    from jianmu_bt.guard import GuardEnforcer

    tree = desk([TRANSFER, "I will help you myself."], ["never asked"])
    guard = GuardEnforcer.from_config({"deny": ["transfer_to_billing"]})
    result = TreeRunner(tree, StateManager(AgentState), services={"guard": guard}).run(timeout=10)
    assert result.ok and result.state["final_answer"] == "I will help you myself."
    assert result.state["messages"][2]["content"].startswith("Error:")

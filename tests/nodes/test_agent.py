"""The agent loop: AgentLLMNode -> ToolExecutor -> done check, with a scripted LLM."""

import py_trees
import pytest
from py_trees.common import Status

from jianmu_bt import ToolCall, tool
from jianmu_bt.guard import GuardEnforcer
from jianmu_bt.llm import LLMResponse, ScriptedProvider, Usage
from jianmu_bt.nodes import AgentLLMNode, react_agent
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner


class Task(AgentState):
    question: str = "What is 17 * 23?"
    answer: str | None = None


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@tool(parallel_safe=False, effect_tags=["exec"])
def shell(cmd: str) -> str:
    """Run a shell command."""
    return "ran " + cmd


def run_agent(replies, *, tools=(multiply,), services=None, **kwargs):
    provider = ScriptedProvider(replies)
    root = react_agent("Solver", tools=list(tools), provider=provider, **kwargs)
    runner = TreeRunner(root, StateManager(Task), services=services)
    events = []
    runner.events.subscribe(events.append)
    return provider, runner.run(timeout=30), events


def test_agent_calls_a_tool_then_answers_into_the_output_key():
    provider, result, _ = run_agent(
        [
            {"tool_calls": [{"name": "multiply", "arguments": {"a": 17, "b": 23}}]},
            "17 * 23 = 391",
        ],
        goal="{question}",
        output_key="answer",
    )
    assert result.ok and result.state["answer"] == "17 * 23 = 391"
    roles = [m["role"] for m in result.state["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert result.state["messages"][0]["content"] == "What is 17 * 23?"
    assert result.state["messages"][2]["content"] == "391"
    # The second request carried the whole conversation with the tool result and its id.
    second = provider.calls[1].messages
    call_id = result.state["messages"][1]["tool_calls"][0]["id"]
    assert second[-1] == {
        "role": "tool",
        "tool_call_id": call_id,
        "name": "multiply",
        "content": "391",
    }


def test_system_prompt_and_tool_schemas_reach_the_llm():
    provider, _, _ = run_agent(["done"], goal="hi", system_prompt="You solve {question}")
    request = provider.calls[0]
    assert request.messages[0] == {"role": "system", "content": "You solve What is 17 * 23?"}
    assert [t["name"] for t in request.tools] == ["multiply"]


def test_max_iterations_exhausted_is_failure_with_reason():
    loop = {"tool_calls": [{"name": "multiply", "arguments": {"a": 1, "b": 1}}]}
    _, result, _ = run_agent([loop] * 3, goal="x", max_iterations=3)
    assert result.status == Status.FAILURE
    assert "no final answer after 3 iterations" in result.reason


def test_llm_error_fails_the_agent_with_the_reason():
    _, result, _ = run_agent([], goal="x")
    assert result.status == Status.FAILURE and "Solver.llm" in result.reason


def test_parallel_tool_calls_in_one_reply_and_a_guard_denial_the_llm_reads():
    guard = GuardEnforcer.from_config({"deny": ["shell"]})
    replies = [
        {
            "tool_calls": [
                {"name": "multiply", "arguments": {"a": 2, "b": 3}},
                {"name": "shell", "arguments": {"cmd": "rm -rf /"}},
            ]
        },
        "6, and I may not run shell commands",
    ]
    provider, result, events = run_agent(
        replies, tools=(multiply, shell), services={"guard": guard}, goal="go", output_key="answer"
    )
    assert result.ok
    observations = [m["content"] for m in result.state["messages"] if m["role"] == "tool"]
    assert observations[0] == "6" and "refused by policy deny_list" in observations[1]
    assert any(e.type == "guard.decision" and e.data["decision"] == "deny" for e in events)
    assert provider.calls[1].messages[-1]["content"].startswith("Error:")


def test_streaming_emits_text_deltas_and_assembles_the_reply():
    _, result, events = run_agent(["streamed answer"], goal="x", stream=True, output_key="answer")
    assert result.state["answer"] == "streamed answer"
    deltas = "".join(e.data["text"] for e in events if e.type == "llm.delta")
    assert deltas == "streamed answer"


def test_usage_is_added_up_across_turns():
    replies = [
        LLMResponse.build(
            tool_calls=[ToolCall("multiply", {"a": 1, "b": 2})],
            usage=Usage(input_tokens=10, output_tokens=5),
        ),
        LLMResponse.build("ok", usage=Usage(input_tokens=20, output_tokens=1)),
    ]
    _, result, _ = run_agent(replies, goal="x")
    assert result.state["usage"]["input_tokens"] == 30
    assert result.state["usage"]["output_tokens"] == 6


def test_llm_node_without_provider_fails_clearly():
    root = py_trees.composites.Sequence("s", memory=True, children=[AgentLLMNode(name="LLM")])
    result = TreeRunner(root, StateManager(Task)).run()
    assert result.status == Status.FAILURE and "no LLM provider" in result.reason


@pytest.mark.anyio
async def test_provider_from_services_and_agent_inside_a_larger_tree():
    provider = ScriptedProvider(["first", "second"])
    agent_a = react_agent("A", goal="a", output_key="answer")
    agent_b = react_agent("B", goal="b", output_key="final_answer", messages_key="messages")
    root = py_trees.composites.Sequence("both", memory=True, children=[agent_a, agent_b])
    result = await TreeRunner(root, StateManager(Task), services={"llm": provider}).arun()
    assert result.ok
    assert (result.state["answer"], result.state["final_answer"]) == ("first", "second")


def test_agents_doc_example_runs(capsys):
    import re
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "agents.md"
    code = re.findall(r"```python\n(.*?)```", doc.read_text(), re.S)[0]
    exec(compile(code, str(doc), "exec"), {"__name__": "doc_example"})
    assert capsys.readouterr().out.strip() == "Status.SUCCESS 17 * 23 = 391"

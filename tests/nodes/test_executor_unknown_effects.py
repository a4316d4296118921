"""Unknown effects in the tree layer: an executor counts `unknown` in `tool_effects` for a tool that
declares no effects and is not read-only; an agent offered as a tool is read-only only when all
its tools are, and its effects are theirs together."""

from __future__ import annotations

from jianmu_bt import ToolCall, tool
from jianmu_bt.nodes import ToolExecutor
from jianmu_bt.nodes.agent_tool import AgentTool
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner
from jianmu_bt.tools import ToolSet


@tool(blocking=False)
def stamp(text: str) -> str:
    """Declares nothing: its effects are unknown."""
    return text


@tool(blocking=False, read_only=True)
def peek(text: str) -> str:
    """Declared read-only."""
    return text


@tool(blocking=False, effect_tags=["mail"])
def mail(text: str) -> str:
    """Declares the mail effect."""
    return text


TOOLS = ToolSet([stamp, peek, mail])


def call(name: str, n: int = 1) -> ToolCall:
    return ToolCall(name, {"text": "x"}, f"{name}{n}")


def test_an_executor_counts_unknown_effects_in_the_state() -> None:
    state = StateManager(AgentState)
    state.set("actions", [call("stamp", 1), call("stamp", 2), call("peek"), call("mail")])
    result = TreeRunner(ToolExecutor(TOOLS), state).run(timeout=10)
    assert result.ok, result.reason
    assert result.state["tool_effects"] == {"unknown": 2, "mail": 1}


def test_an_agent_tool_is_read_only_only_when_all_its_tools_are() -> None:
    readers = AgentTool("reader", "Reads.", tools=[peek])
    assert readers.read_only is True and readers.effect_tags == ()
    mixed = AgentTool("mixed", "Reads, mails and stamps.", tools=[peek, mail, stamp])
    assert mixed.read_only is False
    assert mixed.effect_tags == ("mail", "unknown")

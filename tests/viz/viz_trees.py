"""Trees built in Python for the viz tests: tool steps, decorators, agents, awkward names."""

from __future__ import annotations

import py_trees

from jianmu_bt import tool
from jianmu_bt.llm import ScriptedProvider
from jianmu_bt.nodes import ToolNode, react_agent
from jianmu_bt.runtime import AgentState


class Task(AgentState):
    question: str = "What is 6 * 7?"
    product: int | None = None
    answer: str | None = None


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(reason)


def agent(name: str = "Solver", replies=None, max_iterations: int = 4):
    """The agent subtree react_agent builds, with a scripted LLM."""
    provider = ScriptedProvider(
        replies
        if replies is not None
        else [
            {"tool_calls": [{"name": "multiply", "arguments": {"a": 6, "b": 7}}]},
            "6 * 7 = 42",
        ]
    )
    return react_agent(
        name,
        tools=[multiply],
        provider=provider,
        goal="{question}",
        output_key="answer",
        max_iterations=max_iterations,
    )


def mixed_tree(step_name: str = "step: multiply") -> py_trees.behaviour.Behaviour:
    """A sequence of a tool step, a retry around a selector, and an agent subtree."""
    step = ToolNode(multiply, name=step_name, arguments={"a": 6, "b": 7}, output_key="product")
    fallback = py_trees.composites.Selector(
        "Fallback",
        memory=True,
        children=[
            py_trees.behaviours.Failure("dup"),
            py_trees.behaviours.Success("dup"),
        ],
    )
    retry = py_trees.decorators.Retry("Again", fallback, 2)
    return py_trees.composites.Sequence("Main", memory=True, children=[step, retry, agent()])

"""The quickstart tree built in Python, without YAML: tool steps, a condition, a guard denial
and a scripted agent subtree, run by the event-driven TreeRunner, then drawn as DOT.

Run: python examples/tree_in_python.py
"""

import py_trees

from jianmu_bt import ToolSet
from jianmu_bt.guard import GuardEnforcer
from jianmu_bt.llm import ScriptedProvider
from jianmu_bt.nodes import ToolNode, react_agent
from jianmu_bt.nodes.condition import Condition
from jianmu_bt.nodes.set_values import SetValues
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner
from jianmu_bt.viz import status_lines, tree_to_dot


class Quickstart(AgentState):
    """The run's state: AgentState brings `messages`, `actions`, `final_answer`, ..."""

    numbers: str = "2 + 3 * 4"
    question: str = "What is 17 * 23?"
    total: str | None = None
    saved: bool = False
    answer: str | None = None


def build(tools: ToolSet) -> py_trees.behaviour.Behaviour:
    """Sum -> positive? -> save (refused by the guard) or note it -> agent -> answered?"""
    llm = ScriptedProvider(
        [
            {"tool_calls": [{"name": "calculator", "arguments": {"expression": "17 * 23"}}]},
            "17 * 23 = 391",
        ]
    )
    save_or_skip = py_trees.composites.Selector(
        "SaveOrSkip",
        memory=True,
        children=[
            ToolNode(
                tools["write_file"],
                name="SaveTotal",
                arguments={"path": "total.txt", "content": "total = {total}"},
            ),
            SetValues("NoteNotSaved", {"saved": False}),
        ],
    )
    return py_trees.composites.Sequence(
        "Quickstart",
        memory=True,
        children=[
            ToolNode(
                tools["calculator"],
                name="Sum",
                arguments={"expression": "{numbers}"},
                output_key="total",
            ),
            Condition("TotalIsPositive", "float(total) > 0"),
            save_or_skip,
            react_agent(
                "Solver",
                tools=tools.subset(["calculator"]),
                provider=llm,
                goal="{question}",
                output_key="answer",
                max_iterations=4,
            ),
            Condition("Answered", "answer is not None and len(answer) > 0"),
        ],
    )


def main() -> None:
    tools = ToolSet.resolve(["calculator", "write_file"])
    root = build(tools)
    guard = GuardEnforcer.from_config({"deny": ["write_file"]})
    state = StateManager(Quickstart)
    runner = TreeRunner(root, state, services={"guard": guard})
    result = runner.run(timeout=30)
    print(f"status: {result.status.value} after {result.ticks} ticks")
    print("\n".join(status_lines(root, result.node_statuses)))
    print(f"total = {result.state['total']}, answer = {result.state['answer']!r}")
    print(tree_to_dot(root, result.node_statuses, title="quickstart (Python)"))
    state.close()


if __name__ == "__main__":
    main()

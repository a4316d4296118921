"""The kill -9 test's pipeline (pipeline.yaml), built in Python as a PythonTree.

`python python_pipeline.py run RUN_ID STORE` starts a durable run, `python python_pipeline.py
resume RUN_ID STORE [--approve ID]... [--deny ID]...` continues one (exit 0 succeeded, 1 failed,
3 paused); `jianmu resume RUN_ID --store STORE` can too: the run records the tree's source,
`python_pipeline:pipeline`.
"""

from __future__ import annotations

import sys

import py_trees
from ledger_tools import idem_step, step

from jianmu_bt import AgentState, PythonTree, StateManager, ToolNode, react_agent
from jianmu_bt.llm import ScriptedProvider


class Ledger(AgentState):
    """The pipeline's state: the agent's messages, and its answer."""

    answer: str | None = None


REPLIES = [
    {
        "tool_calls": [
            {"name": "step", "arguments": {"name": "p1"}},
            {"name": "step", "arguments": {"name": "p2"}},
            {"name": "idem_step", "arguments": {"name": "p3"}},
        ]
    },
    {"tool_calls": [{"name": "step", "arguments": {"name": "s4"}}]},
    "all steps done",
]


def _skippable(node: py_trees.behaviour.Behaviour) -> py_trees.behaviour.Behaviour:
    """A step a reviewer may skip (it had happened) without failing the run."""
    return py_trees.decorators.FailureIsSuccess(f"{node.name}.may_skip", node)


def build() -> py_trees.behaviour.Behaviour:
    """The pipeline: three tool steps, an agent loop with a parallel batch, a last step."""
    return py_trees.composites.Sequence(
        "Main",
        memory=True,
        children=[
            _skippable(ToolNode(step, "A", arguments={"name": "a"})),
            ToolNode(idem_step, "B", arguments={"name": "b"}),
            _skippable(ToolNode(step, "C", arguments={"name": "c"})),
            react_agent(
                "Worker",
                tools=[step, idem_step],
                provider=ScriptedProvider(REPLIES),
                goal="Write the ledger",
                max_iterations=5,
                output_key="answer",
            ),
            _skippable(ToolNode(step, "Z", arguments={"name": "z"})),
        ],
    )


def pipeline() -> PythonTree:
    """The tree, as every process of a run builds it."""
    return PythonTree(
        "python_pipeline", build, StateManager(Ledger), source="python_pipeline:pipeline"
    )


def main(argv: list[str]) -> int:
    """`run RUN_ID STORE` or `resume RUN_ID STORE [--approve ID]... [--deny ID]...`."""
    command, run_id, store = argv[:3]
    flags = argv[3:]
    approve = [flags[i + 1] for i, flag in enumerate(flags) if flag == "--approve"]
    deny = [flags[i + 1] for i, flag in enumerate(flags) if flag == "--deny"]
    with pipeline() as tree:
        if command == "run":
            result = tree.run(store=store, run_id=run_id, hold="pause")
        else:
            result = tree.resume(run_id, store=store, approve=approve, deny=deny, hold="pause")
    return {"succeeded": 0, "failed": 1, "paused": 3}[result.run_status]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

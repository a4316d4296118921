"""Checkpoint deltas: a durable run's history reads the same as if every checkpoint were whole,
and the store grows linearly with the steps."""

from __future__ import annotations

import sqlite3

import py_trees
import pytest

from jianmu_bt import AgentState, PythonTree, StateManager, ToolNode, react_agent, tool
from jianmu_bt.llm import ScriptedProvider
from jianmu_bt.runtime import checkpoints, journal
from jianmu_bt.store import SQLiteStore, open_store


@tool(read_only=True)
def echo(text: str) -> str:
    """Give the text back."""
    return text


class Notes(AgentState):
    """An agent's messages, and fields the steps write."""

    last: str | None = None
    answer: str | None = None


def _agent_tree(steps: int) -> PythonTree:
    replies = [
        {"tool_calls": [{"name": "echo", "arguments": {"text": f"t{i}"}}]} for i in range(steps)
    ]

    def build() -> py_trees.behaviour.Behaviour:
        return py_trees.composites.Sequence(
            "Main",
            memory=True,
            children=[
                ToolNode(echo, "Before", arguments={"text": "before"}, output_key="last"),
                react_agent(
                    "Agent",
                    tools=[echo],
                    provider=ScriptedProvider([*replies, "done"]),
                    goal="go",
                    max_iterations=steps + 2,
                    output_key="answer",
                ),
                ToolNode(echo, "After", arguments={"text": "after"}, output_key="last"),
            ],
        )

    return PythonTree("deltas", build, StateManager(Notes))


def _without_ticks(document):
    progress = dict(document.get("progress", {}))
    progress.pop("tick", None)
    return {**document, "progress": progress}


def test_the_history_of_a_run_with_deltas_reads_as_whole_checkpoints(store_location, monkeypatch):
    runs = {}
    monkeypatch.setattr(journal, "GROUP_ENTRIES", 1)  # a checkpoint with every outcome
    for every in (1, checkpoints.FULL_EVERY):
        monkeypatch.setattr(checkpoints, "FULL_EVERY", every)
        with open_store(store_location) as store, _agent_tree(12) as tree:
            assert tree.run(store=store, run_id=f"E{every}").ok
            runs[every] = [_without_ticks(cp.data) for cp in store.history(f"E{every}")]
    whole, deltas = runs[1], runs[checkpoints.FULL_EVERY]
    assert len(whole) == len(deltas) > 20
    assert deltas == whole
    assert len(deltas[-1]["state"]["messages"]) > 24  # the conversation grew by deltas


def _checkpoint_bytes(path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT SUM(LENGTH(data)) FROM checkpoints").fetchone()[0]


def _sequence_tree(steps: int) -> PythonTree:
    def build() -> py_trees.behaviour.Behaviour:
        children = [
            ToolNode(echo, f"S{i}", arguments={"text": f"s{i}"}, output_key="last")
            for i in range(steps)
        ]
        return py_trees.composites.Sequence("Main", memory=True, children=children)

    return PythonTree("linear", build, StateManager(Notes))


@pytest.mark.parametrize("kind", ["sequence", "agent"])
def test_the_store_grows_linearly_with_the_steps(tmp_path, kind):
    make = _sequence_tree if kind == "sequence" else _agent_tree
    sizes = {}
    for steps in (100, 400):
        path = tmp_path / f"{kind}{steps}.db"
        with SQLiteStore(path) as store, make(steps) as tree:
            assert tree.run(store=store, run_id="R").ok
        sizes[steps] = _checkpoint_bytes(path)
    # Four times the steps: about four times the bytes (whole checkpoints would make it 16).
    assert sizes[400] / sizes[100] < 6, sizes

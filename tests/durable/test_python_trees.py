"""PythonTree: trees built in Python run, pause, resume and fork durably, as YAML trees do."""

from __future__ import annotations

import threading

import py_trees
import pytest

from jianmu_bt import AgentState, PythonTree, StateManager, ToolNode, tool
from jianmu_bt.guard import GuardEnforcer
from jianmu_bt.runtime.durable import DurableRunError
from jianmu_bt.runtime.python_tree import python_tree_from_source
from jianmu_bt.store import SQLiteStore

CALLS: list[str] = []


@tool(effect_tags=["ledger"])
def act(name: str) -> str:
    """A side effect the test counts."""
    CALLS.append(name)
    return f"did {name}"


class Order(AgentState):
    """A state with one input."""

    item: str = "book"


def _build(last: str = "close"):
    return lambda: py_trees.composites.Sequence(
        "Order",
        memory=True,
        children=[
            ToolNode(act, "Open", arguments={"name": "{item}"}),
            ToolNode(act, "Pay", arguments={"name": "pay"}),
            ToolNode(act, last.title(), arguments={"name": last}),
        ],
    )


def _tree(last: str = "close", version: str = "") -> PythonTree:
    guard = GuardEnforcer.from_config({"approve": ["act"]})
    return PythonTree("order", _build(last), StateManager(Order), guard=guard, version=version)


@pytest.fixture(autouse=True)
def _reset():
    CALLS.clear()


def _lease_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("jianmu-lease")]


def test_a_python_tree_pauses_and_resumes_in_a_new_tree_without_repeating_calls(tmp_path):
    store = SQLiteStore(tmp_path / "runs.db")
    with _tree() as tree:
        paused = tree.run({"item": "pen"}, store=store, run_id="P", hold="pause")
    assert paused.paused and CALLS == []
    for _ in range(3):  # each call is held once: approve it, resume again
        held = [e.call_id for e in store.journal("P") if e.status == "held"]
        with _tree() as tree:
            result = tree.resume("P", store=store, approve=held, hold="pause")
        if not result.paused:
            break
    assert result.ok and CALLS == ["pen", "pay", "close"]
    assert store.get_run("P").tree_path == ""  # no source: resumed from Python only
    assert _lease_threads() == []  # the heartbeat ended with each run


def test_a_changed_tree_or_version_is_refused(tmp_path):
    store = SQLiteStore(tmp_path / "runs.db")
    with _tree() as tree:
        assert tree.run(store=store, run_id="P", hold="pause").paused
    for changed in (_tree(last="refund"), _tree(version="2")):
        with changed:
            watchers = len(changed.state._subscribers)
            with pytest.raises(DurableRunError, match="the tree changed since run P began"):
                changed.resume("P", store=store)
            assert len(changed.state._subscribers) == watchers  # nothing left watching it
    assert CALLS == []


def test_every_run_starts_from_the_initial_state_and_a_fork_replays_up_to_its_checkpoint(
    tmp_path,
):
    store = SQLiteStore(tmp_path / "runs.db")
    plain = PythonTree("order", _build(), StateManager(Order))
    with plain:
        first = plain.run({"item": "pen"}, store=store, run_id="A")
        second = plain.run(store=store, run_id="B")
        assert first.ok and second.ok and CALLS == ["pen", "pay", "close", "book", "pay", "close"]
        opened = next(  # the checkpoint after `Open` finished
            cp
            for cp in store.history("A")
            if [e.status for e in store.journal("A", upto=cp.position)] == ["done"]
        )
        CALLS.clear()
        forked = plain.fork("A", opened.seq, store=store, new_run_id="A2")
    assert forked.ok and CALLS == ["pay", "close"]


def test_a_source_that_cannot_build_the_tree_is_named():
    with pytest.raises(ValueError, match="cannot import 'no_such_module'"):
        python_tree_from_source("python:no_such_module:make")
    with pytest.raises(ValueError, match="has no function 'nope'"):
        python_tree_from_source("python:json:nope")
    with pytest.raises(ValueError, match="returned dict, not a PythonTree"):
        python_tree_from_source("python:builtins:dict")
    with pytest.raises(ValueError, match="give 'module:function'"):
        PythonTree("x", _build(), StateManager(Order), source="no-colon")


@tool(effect_tags=["ledger"])
def opaque(name: str) -> object:
    """A side effect whose output no run can record exactly."""
    CALLS.append(name)
    return object()


def test_an_output_the_run_cannot_record_fails_the_call_once_it_ran(tmp_path):
    from jianmu_bt.llm import ScriptedProvider
    from jianmu_bt.nodes import react_agent

    replies = [{"tool_calls": [{"name": "opaque", "arguments": {"name": "agent"}}]}, "done"]

    def build():
        return py_trees.composites.Sequence(
            "Main",
            memory=True,
            children=[
                py_trees.decorators.FailureIsSuccess(
                    "may_fail", ToolNode(opaque, "Step", arguments={"name": "step"})
                ),
                react_agent("Agent", tools=[opaque], provider=ScriptedProvider(replies), goal="go"),
            ],
        )

    store = SQLiteStore(tmp_path / "runs.db")
    with PythonTree("opaque", build, StateManager(Order)) as tree:
        result = tree.run(store=store, run_id="O")
    assert result.ok and CALLS == ["step", "agent"]
    calls = [e for e in store.journal("O") if e.kind == "tool"]
    assert [e.status for e in calls] == ["failed", "failed"]
    for entry in calls:
        error = entry.result["error"]
        assert "opaque ran (its effects happened)" in error and "output" in error
    tool_message = next(m for m in result.state["messages"] if m.get("role") == "tool")
    assert "cannot be recorded" in str(tool_message["content"])

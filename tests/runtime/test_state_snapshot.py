"""Snapshot and restore of a run's state through JSON."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pydantic import BaseModel, ConfigDict

from jianmu_bt.runtime.state import (
    AgentState,
    StateManager,
    StateValidationError,
    UnknownStateKeyError,
)
from jianmu_bt.tools import ToolCall


def filled_agent_state() -> StateManager:
    state = StateManager(AgentState)
    state.append_port_messages(
        {"role": "user", "content": "What is 17 * 23?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
    )
    state.write_port("actions", [ToolCall("calculator", {"expression": "17 * 23"}, "c1")])
    state.write_port("tool_effects", {"compute": 1})
    state.write_port("guard", {"pending": ["c1"], "spent": {"http": 2}})
    state.write_port("usage", {"prompt_tokens": 12})
    return state


def test_snapshot_is_json_and_round_trips_tool_calls_as_tool_calls() -> None:
    with filled_agent_state() as state:
        snapshot = state.snapshot()
        text = json.dumps(snapshot)  # raises if anything is not JSON-able
        assert snapshot["actions"] == [
            {"name": "calculator", "arguments": {"expression": "17 * 23"}, "id": "c1"}
        ]
        with StateManager.from_snapshot(AgentState, text) as copy:
            assert copy.namespace != state.namespace
            assert copy.get() == state.get()
            assert all(isinstance(call, ToolCall) for call in copy.get("actions"))
        assert json.loads(state.to_json()) == snapshot


def test_restore_replaces_the_state_and_tells_subscribers_once() -> None:
    with filled_agent_state() as source, StateManager(AgentState) as target:
        heard: list[frozenset[str]] = []
        target.subscribe(heard.append)
        target.restore(source.to_json())
        assert target.get() == source.get()
        assert target.version == 1
        assert heard == [frozenset(AgentState.model_fields)]


def test_restore_fills_defaults_for_fields_the_snapshot_leaves_out() -> None:
    with filled_agent_state() as state:
        state.restore({"final_answer": "391"})
        assert state.get("final_answer") == "391"
        assert state.get("messages") == [] and state.get("actions") == []


@pytest.mark.parametrize(
    ("data", "error", "words"),
    [
        ('{"final_answer": 391}', StateValidationError, "field 'final_answer'"),
        ({"tool_effects": {"http": "lots"}}, StateValidationError, "field 'tool_effects'"),
        ({"actions": [7]}, StateValidationError, "field 'actions'"),
        ({"final_answr": "x"}, UnknownStateKeyError, "'final_answr'; known fields: messages"),
        ("{not json", StateValidationError, "not valid JSON"),
        ("[1, 2]", StateValidationError, "JSON object of fields, got list"),
    ],
)
def test_restore_refuses_bad_data_and_leaves_the_state_unchanged(
    data: object, error: type[Exception], words: str
) -> None:
    with filled_agent_state() as state:
        before, version = state.get(), state.version
        with pytest.raises(error, match=words.replace("(", "\\(")):
            state.restore(data)  # type: ignore[arg-type]
        assert state.get() == before and state.version == version


def test_restore_error_names_the_nested_location() -> None:
    with StateManager(AgentState) as state:
        with pytest.raises(StateValidationError) as info:
            state.restore({"usage": {"prompt_tokens": "many"}})
        assert info.value.field == "usage"
        assert "['prompt_tokens']" in str(info.value)


def test_from_snapshot_refuses_bad_data_without_touching_the_blackboard() -> None:
    from py_trees.blackboard import Blackboard

    keys_before = set(Blackboard.storage)
    with pytest.raises(StateValidationError):
        StateManager.from_snapshot(AgentState, '{"messages": "hello"}')
    assert set(Blackboard.storage) == keys_before


def test_a_strict_schema_restores_json_text_of_its_own_snapshot() -> None:
    class Timed(BaseModel):
        model_config = ConfigDict(strict=True)
        started: datetime = datetime(2026, 1, 1, tzinfo=UTC)
        attempts: int = 0

    with StateManager(Timed, initial={"attempts": 2}) as state:
        text = state.to_json()
        assert json.loads(text)["started"] == "2026-01-01T00:00:00Z"
        with StateManager.from_snapshot(Timed, text) as copy:
            assert copy.get() == state.get()

"""Reducers: the built-ins on their own, and as field reducers of a StateManager."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from jianmu_bt.runtime.reducers import (
    Reducer,
    add_reducer,
    append_reducer,
    merge_reducer,
    replace_reducer,
)
from jianmu_bt.runtime.state import AgentState, StateManager, StateValidationError
from jianmu_bt.tools import ToolCall


def test_replace_returns_the_new_value() -> None:
    assert replace_reducer([1], [2]) == [2]


def test_append_extends_with_a_list_and_appends_a_single_item() -> None:
    old = [1]
    assert append_reducer(old, [2, 3]) == [1, 2, 3]
    assert append_reducer(old, 4) == [1, 4]
    assert append_reducer(old, (5, 6)) == [1, (5, 6)]  # only a list extends
    assert append_reducer(None, 1) == [1]
    assert old == [1]  # never mutated


def test_add_adds_numbers_and_dicts_of_numbers_per_key() -> None:
    assert add_reducer(2, 3) == 5
    assert add_reducer(1.5, 1) == 2.5
    old = {"http": 2, "file_write": 1}
    assert add_reducer(old, {"http": 1, "bash": 1}) == {"http": 3, "file_write": 1, "bash": 1}
    assert add_reducer({"a": {"b": 1}}, {"a": {"b": 2, "c": 1}}) == {"a": {"b": 3, "c": 1}}
    assert add_reducer(None, {"x": 1}) == {"x": 1}
    assert old == {"http": 2, "file_write": 1}


def test_add_refuses_values_that_do_not_add() -> None:
    with pytest.raises(TypeError, match="got dict and int"):
        add_reducer({"a": 1}, 1)
    with pytest.raises(TypeError, match="got int and str"):
        add_reducer({"a": 1}, {"a": "2"})


def test_merge_updates_a_dict_shallowly() -> None:
    old = {"a": 1, "b": {"x": 1}}
    assert merge_reducer(old, {"b": {"y": 2}, "c": 3}) == {"a": 1, "b": {"y": 2}, "c": 3}
    assert merge_reducer(None, {"a": 1}) == {"a": 1}
    assert old == {"a": 1, "b": {"x": 1}}
    with pytest.raises(TypeError, match="'merge' needs a dict"):
        merge_reducer(old, [1])


def test_an_unknown_reducer_name_is_an_error_listing_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown reducer 'apend'; known reducers: add, append"):
        Reducer("apend")
    with pytest.raises(TypeError, match="a reducer is a name"):
        Reducer(42)  # type: ignore[arg-type]


class Counters(BaseModel):
    log: Annotated[list[str], Reducer("append")] = []
    effects: Annotated[dict[str, int], Reducer("add")] = {}
    total: Annotated[int, Reducer("add")] = 0
    settings: Annotated[dict[str, Any], Reducer("merge")] = {}
    latest: str = ""
    capped: Annotated[list[int], Reducer("append"), Field(max_length=2)] = []


@pytest.fixture
def state():
    with StateManager(Counters) as manager:
        yield manager


def test_reducers_named_in_field_metadata_apply_on_write_port(state: StateManager) -> None:
    state.write_port("log", "a")
    state.write_port("log", ["b", "c"])
    state.write_port("effects", {"http": 1})
    state.write_port("effects", {"http": 1, "bash": 2})
    state.write_port("total", 2)
    state.write_port("total", 3)
    state.write_port("settings", {"model": "m", "t": 0})
    state.write_port("settings", {"t": 1})
    state.write_port("latest", "x")
    state.write_port("latest", "y")
    assert state.get() == {
        "log": ["a", "b", "c"],
        "effects": {"http": 2, "bash": 2},
        "total": 5,
        "settings": {"model": "m", "t": 1},
        "latest": "y",
        "capped": [],
    }


def test_appended_items_are_validated_and_a_bad_one_changes_nothing(state: StateManager) -> None:
    state.write_port("log", ["a"])
    with pytest.raises(StateValidationError) as info:
        state.write_port("log", ["b", 3])
    assert info.value.field == "log" and info.value.value == ["b", 3]
    assert "at [1]" in str(info.value)
    assert state.get("log") == ["a"]


def test_list_constraints_still_hold_when_appending(state: StateManager) -> None:
    state.write_port("capped", [1, 2])
    with pytest.raises(StateValidationError, match=r"'capped'.*at most 2"):
        state.write_port("capped", 3)
    assert state.get("capped") == [1, 2]


def test_a_reducer_that_cannot_combine_is_a_validation_error(state: StateManager) -> None:
    state.write_port("effects", {"http": 1})
    with pytest.raises(StateValidationError) as info:
        state.write_port("effects", 5)
    assert "reducer 'add' of state field 'effects'" in str(info.value)
    assert isinstance(info.value.__cause__, TypeError)
    assert state.get("effects") == {"http": 1}


def test_the_reduced_result_is_validated(state: StateManager) -> None:
    with pytest.raises(StateValidationError, match=r"'effects' \(after reducer 'add'\)"):
        state.write_port("effects", {"http": "one"})
    assert state.get("effects") == {}


def test_reducers_argument_overrides_metadata_and_accepts_callables() -> None:
    def keep_max(old: int, new: int) -> int:
        return max(old, new)

    with StateManager(Counters, reducers={"log": "replace", "total": keep_max}) as state:
        state.write_port("log", ["a"])
        state.write_port("log", ["b"])
        state.write_port("total", 7)
        state.write_port("total", 3)
        assert (state.get("log"), state.get("total")) == (["b"], 7)


def test_a_raising_custom_reducer_leaves_the_state_unchanged() -> None:
    def refuse(old: Any, new: Any) -> Any:
        raise RuntimeError("no")

    with StateManager(Counters, reducers={"latest": Reducer(refuse)}) as state:
        with pytest.raises(StateValidationError, match=r"reducer 'refuse'.*no"):
            state.write_port("latest", "x")
        assert state.get("latest") == "" and state.version == 0


def test_update_applies_each_fields_reducer(state: StateManager) -> None:
    state.update({"log": ["a"], "total": 1})
    state.update({"log": "b", "total": 2, "latest": "z"})
    assert (state.get("log"), state.get("total"), state.get("latest")) == (["a", "b"], 3, "z")


def test_agent_state_counters_add_and_actions_become_tool_calls() -> None:
    with StateManager(AgentState) as state:
        state.write_port("usage", {"prompt_tokens": 10, "completion_tokens": 2})
        state.write_port("usage", {"prompt_tokens": 5})
        state.write_port(
            "actions",
            [
                {"id": "c1", "type": "function", "function": {"name": "Calc", "arguments": "{}"}},
                ToolCall("read_file", {"path": "a.txt"}, "c2"),
            ],
        )
        assert state.get("usage") == {"prompt_tokens": 15, "completion_tokens": 2}
        assert state.get("actions") == [
            ToolCall("Calc", {}, "c1"),  # the name as the model wrote it
            ToolCall("read_file", {"path": "a.txt"}, "c2"),
        ]
        state.write_port("actions", [])  # actions replace: a new batch each LLM turn
        assert state.get("actions") == []

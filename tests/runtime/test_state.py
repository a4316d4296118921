"""StateManager: defaults, validation, writes, blackboard isolation, subscribers, lifecycle."""

from __future__ import annotations

import gc
import logging
import operator
import threading
from typing import Annotated

import py_trees
import pytest
from py_trees.blackboard import Blackboard
from pydantic import BaseModel, ConfigDict, Field, model_validator

from jianmu_bt.runtime.state import (
    AgentState,
    StateClosedError,
    StateManager,
    StateValidationError,
    UnknownStateKeyError,
)


class Counter(BaseModel):
    count: int = 0
    label: str = "start"
    items: list[int] = []
    limit: Annotated[int, Field(ge=0, le=10)] = 5


class Required(BaseModel):
    goal: str
    notes: list[str] = []


def blackboard_keys_under(namespace: str) -> set[str]:
    """Every storage or metadata key of the real py_trees blackboard under `namespace`."""
    prefix = namespace + "/"
    return {k for k in (*Blackboard.storage, *Blackboard.metadata) if k.startswith(prefix)}


@pytest.fixture
def state():
    with StateManager(Counter) as manager:
        yield manager


# --------------------------------------------------------------------------- defaults, reads
def test_defaults_fill_the_fields_not_in_initial() -> None:
    with StateManager(Counter, initial={"count": 3}) as state:
        assert state.get() == {"count": 3, "label": "start", "items": [], "limit": 5}


def test_initial_is_validated_and_refused_naming_the_field() -> None:
    with pytest.raises(StateValidationError) as info:
        StateManager(Counter, initial={"count": "many"})
    assert info.value.field == "count"
    assert "'count'" in str(info.value) and "'many'" in str(info.value)


def test_required_field_must_be_in_initial() -> None:
    with pytest.raises(StateValidationError, match="'goal' is required"):
        StateManager(Required)
    with StateManager(Required, initial={"goal": "sum"}) as state:
        assert state.get("goal") == "sum"


def test_mutable_defaults_are_not_shared_between_runs() -> None:
    with StateManager(AgentState) as one, StateManager(AgentState) as two:
        assert one.get("messages") is not two.get("messages")
        one.write_port("messages", {"role": "user", "content": "hi"})
        assert two.get("messages") == []
        assert AgentState().messages == []


def test_get_unknown_key_is_a_key_error_listing_the_known_fields(state: StateManager) -> None:
    with pytest.raises(KeyError) as info:
        state.get("cuont")
    assert isinstance(info.value, UnknownStateKeyError)
    assert "'cuont'" in str(info.value)
    assert "count, label, items, limit" in str(info.value)
    assert state.get("cuont", default=None) is None


def test_get_without_key_returns_a_shallow_copy(state: StateManager) -> None:
    whole = state.get()
    whole["count"] = 99
    assert state.get("count") == 0
    assert whole["items"] is state.get("items")  # values are shared, not deep-copied


def test_read_port_returns_default_for_unknown_key(state: StateManager) -> None:
    state.write_port("label", "done")
    assert state.read_port("label") == "done"
    assert state.read_port("missing") is None
    assert state.read_port("missing", "fallback") == "fallback"


def test_model_validates_the_whole_state_with_model_validators() -> None:
    class Ordered(BaseModel):
        low: int = 0
        high: int = 1

        @model_validator(mode="after")
        def low_below_high(self) -> Ordered:
            if self.low >= self.high:
                raise ValueError("low must be below high")
            return self

    with StateManager(Ordered) as state:
        assert state.model() == Ordered(low=0, high=1)
        state.write_port("low", 5)  # a per-field write checks the field only
        with pytest.raises(StateValidationError, match="low must be below high"):
            state.model()


# -------------------------------------------------------------------------------- validation
def test_wrong_type_is_refused_with_field_value_and_expected_type(state: StateManager) -> None:
    state.write_port("items", [1, 2])
    before, version = state.get(), state.version
    with pytest.raises(StateValidationError) as info:
        state.write_port("items", ["one", 2])
    error = info.value
    assert error.field == "items" and error.value == ["one", 2]
    assert "'items'" in str(error) and "['one', 2]" in str(error)
    assert "expected list[int]" in str(error)
    assert state.get() == before and state.version == version


def test_long_values_are_shortened_in_the_message(state: StateManager) -> None:
    with pytest.raises(StateValidationError) as info:
        state.write_port("count", "x" * 5000)
    assert len(str(info.value)) < 300


def test_field_constraints_from_annotated_apply(state: StateManager) -> None:
    with pytest.raises(StateValidationError, match="less than or equal to 10"):
        state.write_port("limit", 11)
    assert state.get("limit") == 5


def test_strict_model_config_applies_to_writes() -> None:
    class Strict(BaseModel):
        model_config = ConfigDict(strict=True)
        count: int = 0

    with StateManager(Counter) as lax, StateManager(Strict) as strict:
        lax.write_port("count", "7")
        assert lax.get("count") == 7
        with pytest.raises(StateValidationError, match="'count'"):
            strict.write_port("count", "7")
        assert strict.get("count") == 0


def test_writing_an_unknown_key_raises_and_changes_nothing(state: StateManager) -> None:
    with pytest.raises(UnknownStateKeyError) as info:
        state.write_port("totl", 1)
    assert info.value.field == "totl"
    assert info.value.known == ("count", "label", "items", "limit")
    assert state.version == 0


# ------------------------------------------------------------------------------------ writes
def test_update_is_all_or_nothing(state: StateManager) -> None:
    with pytest.raises(StateValidationError, match="'limit'"):
        state.update({"count": 4, "label": "half", "limit": -1})
    with pytest.raises(UnknownStateKeyError):
        state.update({"count": 4, "nope": 1})
    assert state.get() == {"count": 0, "label": "start", "items": [], "limit": 5}
    assert state.version == 0
    state.update({"count": 4, "label": "half"})
    assert (state.get("count"), state.get("label"), state.version) == (4, "half", 1)


def test_set_replaces_bypassing_the_reducer() -> None:
    with StateManager(AgentState) as state:
        state.write_port("messages", {"role": "user", "content": "a"})
        state.set("messages", [{"role": "user", "content": "b"}])
        assert state.get("messages") == [{"role": "user", "content": "b"}]
        with pytest.raises(StateValidationError, match="'messages'"):
            state.set("messages", "not a list")


def test_append_port_messages_appends_to_the_list() -> None:
    with StateManager(AgentState) as state:
        state.append_port_messages({"role": "system", "content": "s"})
        state.append_port_messages(
            {"role": "user", "content": "u"}, [{"role": "assistant", "content": "a"}]
        )
        assert [m["role"] for m in state.get("messages")] == ["system", "user", "assistant"]
        with pytest.raises(StateValidationError, match="'messages'"):
            state.append_port_messages({"role": "user"}, "not a dict")
        assert len(state.get("messages")) == 3


def test_version_counts_successful_writes_only(state: StateManager) -> None:
    state.write_port("count", 1)
    state.set("count", 2)
    state.update({"count": 3, "label": "x"})
    state.update({})
    with pytest.raises(StateValidationError):
        state.write_port("count", "x")
    assert state.version == 3


def test_concurrent_writes_from_threads_lose_no_update() -> None:
    with StateManager(AgentState) as state:

        def count() -> None:
            for _ in range(500):
                state.write_port("tool_effects", {"http": 1})

        threads = [threading.Thread(target=count) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert state.get("tool_effects") == {"http": 2000}
        assert state.version == 2000


def test_a_reducer_may_write_another_state_and_threads_write_several_states() -> None:
    # One lock serialises every state's writes: it must let a reducer write another state (in
    # the same thread), and writes of separate states from threads still lose nothing.
    with StateManager(Counter) as log, StateManager(Counter, reducers={"count": "add"}) as one:

        def logged(old: int, value: int) -> int:
            log.write_port("count", old + value)
            return old + value

        with StateManager(Counter, reducers={"count": logged}) as noted:
            writer = threading.Thread(target=noted.write_port, args=("count", 4), daemon=True)
            writer.start()
            writer.join(10)
            assert not writer.is_alive(), "the write deadlocked on the state lock"
            assert (noted.get("count"), log.get("count")) == (4, 4)

        with StateManager(Counter, reducers={"count": "add"}) as two:

            def count(state: StateManager) -> None:
                for _ in range(500):
                    state.write_port("count", 1)

            threads = [threading.Thread(target=count, args=(s,)) for s in (one, two, one, two)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            assert (one.get("count"), two.get("count")) == (1000, 1000)


# ------------------------------------------------------------------------- the blackboard
def test_two_managers_are_isolated_on_the_real_blackboard() -> None:
    with StateManager(Counter) as one, StateManager(Counter) as two:
        assert one.namespace != two.namespace
        one.write_port("count", 1)
        two.write_port("count", 2)
        assert (one.get("count"), two.get("count")) == (1, 2)
        reader = py_trees.blackboard.Client(name="reader", namespace=one.namespace)
        try:
            reader.register_key("count", access=py_trees.common.Access.READ)
            assert reader.count == 1
        finally:
            reader.unregister(clear=False)
        assert Blackboard.storage[two.blackboard_key("count")] == 2
        assert blackboard_keys_under(one.namespace) == {
            f"{one.namespace}/{name}" for name in one.fields
        }


def test_a_py_trees_behaviour_reads_the_state_from_the_blackboard() -> None:
    with StateManager(AgentState) as state:
        check = py_trees.behaviours.CheckBlackboardVariableValue(
            name="HasAnswer",
            check=py_trees.common.ComparisonExpression(
                variable=state.blackboard_key("final_answer"), value="391", operator=operator.eq
            ),
        )
        check.tick_once()
        assert check.status == py_trees.common.Status.FAILURE
        state.write_port("final_answer", "391")
        check.tick_once()
        assert check.status == py_trees.common.Status.SUCCESS
        check.blackboard.unregister(clear=False)


def test_a_given_namespace_is_used_and_cannot_be_shared_by_live_runs() -> None:
    with StateManager(Counter, namespace="jianmu/test_run") as state:
        assert state.namespace == "/jianmu/test_run"
        assert state.blackboard_key("count") == "/jianmu/test_run/count"
        with pytest.raises(ValueError, match="already used"):
            StateManager(Counter, namespace="/jianmu/test_run")
    with StateManager(Counter, namespace="/jianmu/test_run") as again:  # free after close
        assert again.get("count") == 0
    with pytest.raises(ValueError, match="invalid state namespace"):
        StateManager(Counter, namespace="/jianmu/a.b")


def test_writes_are_recorded_in_the_py_trees_activity_stream() -> None:
    Blackboard.enable_activity_stream(maximum_size=100)
    try:
        with StateManager(Counter) as state:
            state.write_port("count", 5)
            keys = [item.key for item in Blackboard.activity_stream.data]
            assert state.blackboard_key("count") in keys
            assert state.get("count") == 5
    finally:
        Blackboard.disable_activity_stream()


def test_displays_name_the_state_writer_and_native_clients_share_the_keys() -> None:
    state = StateManager(Counter, initial={"count": 7})
    path = state.blackboard_key("count")
    text = py_trees.display.unicode_blackboard(key_filter={path}, display_only_key_metadata=True)
    assert f"{path} : jianmu s... (w)" in text  # the writer, its name cut by py_trees
    assert path in py_trees.display.unicode_blackboard(key_filter={path})
    native = py_trees.blackboard.Client(name="native", namespace=state.namespace)
    native.register_key("count", access=py_trees.common.Access.READ)
    assert native.count == 7
    state.close()
    # the native reader keeps its registration; the run's value and writer are gone
    assert Blackboard.metadata[path].read == {native.id()} and not Blackboard.metadata[path].write
    assert path not in Blackboard.storage
    native.unregister_key("count")
    assert path not in Blackboard.metadata


# ------------------------------------------------------------------------------ subscribers
def test_subscribers_hear_the_changed_keys(state: StateManager) -> None:
    heard: list[frozenset[str]] = []
    state.subscribe(heard.append)
    state.write_port("count", 1)
    state.update({"label": "x", "items": [1]})
    with pytest.raises(StateValidationError):
        state.write_port("count", "bad")
    assert heard == [frozenset({"count"}), frozenset({"label", "items"})]


def test_a_raising_subscriber_is_logged_and_does_not_break_the_write(
    state: StateManager, caplog: pytest.LogCaptureFixture
) -> None:
    heard: list[frozenset[str]] = []

    def broken(changed: frozenset[str]) -> None:
        raise RuntimeError("subscriber bug")

    state.subscribe(broken)
    state.subscribe(heard.append)
    with caplog.at_level(logging.ERROR, logger="jianmu_bt.runtime.state"):
        state.write_port("count", 1)
    assert state.get("count") == 1 and state.version == 1
    assert heard == [frozenset({"count"})]
    assert "subscriber bug" in caplog.text


def test_unsubscribe_stops_the_calls(state: StateManager) -> None:
    heard: list[frozenset[str]] = []
    unsubscribe = state.subscribe(heard.append)
    state.write_port("count", 1)
    unsubscribe()
    unsubscribe()  # idempotent
    state.write_port("count", 2)
    assert heard == [frozenset({"count"})]


# -------------------------------------------------------------------------------- lifecycle
def test_close_frees_the_blackboard_keys_and_no_client_is_left() -> None:
    StateManager(Counter).close()  # the one process-wide "jianmu state" writer exists from here
    clients_before = set(Blackboard.clients)
    state = StateManager(AgentState)
    assert set(Blackboard.clients) == clients_before  # no py_trees Client per run
    namespace = state.namespace
    assert blackboard_keys_under(namespace)
    state.close()
    state.close()  # idempotent
    assert blackboard_keys_under(namespace) == set()
    assert set(Blackboard.clients) == clients_before
    with pytest.raises(StateClosedError, match="closed"):
        state.get("messages")
    with pytest.raises(StateClosedError):
        state.write_port("final_answer", "x")


def test_a_forgotten_manager_frees_its_keys_when_collected() -> None:
    state = StateManager(AgentState)
    namespace = state.namespace
    del state
    gc.collect()
    assert blackboard_keys_under(namespace) == set()


def test_a_thousand_runs_leave_the_blackboard_as_they_found_it() -> None:
    StateManager(Counter).close()
    sizes = (len(Blackboard.storage), len(Blackboard.metadata), len(Blackboard.clients))
    runs = [StateManager(AgentState, initial={"final_answer": str(i)}) for i in range(1000)]
    assert len({run.namespace for run in runs}) == 1000
    assert [run.get("final_answer") for run in runs[:3]] == ["0", "1", "2"]
    for run in runs:
        run.close()
    assert (len(Blackboard.storage), len(Blackboard.metadata), len(Blackboard.clients)) == sizes


def test_a_cleared_blackboard_gives_a_clear_error_not_a_stale_read() -> None:
    saved = (dict(Blackboard.storage), dict(Blackboard.metadata), dict(Blackboard.clients))
    state = StateManager(Counter)
    try:
        Blackboard.clear()
        with pytest.raises(StateClosedError, match="no longer on the blackboard"):
            state.read_port("count")
        with pytest.raises(StateClosedError):
            state.update({"count": 1})
        state.close()  # still releases cleanly
        assert (Blackboard.storage, Blackboard.metadata, Blackboard.clients) == ({}, {}, {})
    finally:
        Blackboard.storage.update(saved[0])
        Blackboard.metadata.update(saved[1])
        Blackboard.clients.update(saved[2])


def test_unknown_reducer_or_field_in_reducers_fails_at_construction() -> None:
    with pytest.raises(
        ValueError, match="reducer for state field 'items': unknown reducer 'apend'"
    ):
        StateManager(Counter, reducers={"items": "apend"})
    with pytest.raises(UnknownStateKeyError, match="'itmes'"):
        StateManager(Counter, reducers={"itmes": "append"})


def test_schema_must_be_a_pydantic_model() -> None:
    with pytest.raises(TypeError, match="BaseModel subclass"):
        StateManager(dict)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="BaseModel subclass"):
        StateManager(AgentState())  # type: ignore[arg-type]

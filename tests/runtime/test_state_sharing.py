"""StateManagers of one schema share what does not change per run (many runs, one copy)."""

from __future__ import annotations

import gc
import tracemalloc

from jianmu_bt.runtime import AgentState, StateManager
from jianmu_bt.runtime.reducers import REPLACE


def test_managers_of_one_schema_share_their_field_tables():
    first, second = StateManager(AgentState), StateManager(AgentState)
    try:
        assert first._reducers is second._reducers
        assert first._changed is second._changed
        changed: list[frozenset[str]] = []
        first.subscribe(changed.append)
        first.write_port("messages", [{"role": "user", "content": "hi"}])
        first.update({"final_answer": "a", "usage": {"tokens": 1}})
        assert changed == [frozenset({"messages"}), frozenset({"final_answer", "usage"})]
    finally:
        first.close()
        second.close()


def test_a_reducer_override_is_the_managers_own():
    shared = StateManager(AgentState)
    own = StateManager(AgentState, reducers={"messages": "replace"})
    try:
        assert own._reducers is not shared._reducers
        assert own._reducers["messages"] == REPLACE
        assert shared._reducers["messages"].name == "append"
        own.write_port("messages", [{"role": "user", "content": "a"}])
        own.write_port("messages", [{"role": "user", "content": "b"}])
        assert own.get("messages") == [{"role": "user", "content": "b"}]
    finally:
        shared.close()
        own.close()


def test_a_manager_costs_a_bounded_number_of_bytes():
    StateManager(AgentState).close()  # the schema's plan, built once
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        managers = [StateManager(AgentState) for _ in range(200)]
        gc.collect()
        per_manager = (tracemalloc.get_traced_memory()[0] - base) / 200
    finally:
        tracemalloc.stop()
    for manager in managers:
        manager.close()
    assert per_manager < 10_500, per_manager  # 12 KB when every manager built its own tables

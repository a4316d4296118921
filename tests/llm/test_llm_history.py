"""Growing conversations: each message is checked once, memory stays linear in the run."""

from __future__ import annotations

import copy
import gc
import pickle
import tracemalloc

import anyio
import pytest

from jianmu_bt.llm import (
    InvalidRequestError,
    ScriptedProvider,
    history as history_module,
    normalize_messages,
)
from jianmu_bt.llm.history import ConversationCache, copy_messages
from jianmu_bt.nodes import react_agent
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner
from jianmu_bt.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def turn(n: int) -> list[dict]:
    call = {"id": f"c{n}", "type": "function", "function": {"name": "add", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": str(n)},
    ]


def conversation(turns: int) -> list[dict]:
    messages = [{"role": "user", "content": "go"}]
    for n in range(turns):
        messages += turn(n)
    return messages


@pytest.fixture
def checked(monkeypatch):
    """How many messages each normalisation checked."""
    counts: list[int] = []
    real = history_module.normalize_tail

    def counting(messages, start, *args):
        counts.append(len(messages) - start)
        return real(messages, start, *args)

    monkeypatch.setattr(history_module, "normalize_tail", counting)
    return counts


def test_a_growing_conversation_checks_each_message_once(checked):
    cache, messages = ConversationCache(), conversation(0)
    for n in range(50):
        assert cache.normalize(messages).messages[: len(messages)] == normalize_messages(messages)
        messages = messages + turn(n)  # a new list, the same message objects: as a state does
    assert sum(checked) == len(messages) - 2  # the last turn was never sent


def test_errors_are_the_same_and_name_positions_in_the_whole_conversation():
    cache, messages = ConversationCache(), conversation(3)
    cache.normalize(messages)
    bad = [
        [*messages, {"role": "tool", "tool_call_id": "c1", "content": "again"}],
        [*messages, {"role": "tool", "tool_call_id": "nope", "content": "x"}],
        [*messages, {"role": "robot", "content": "x"}],
        messages + turn(9)[:1] + [{"role": "user", "content": "too soon"}],
        messages + turn(9)[:1],
    ]
    for conversation_ in bad:
        with pytest.raises(InvalidRequestError) as full:
            normalize_messages(conversation_)
        with pytest.raises(InvalidRequestError) as cached:
            cache.normalize(conversation_)
        assert str(cached.value) == str(full.value)
    assert str(full.value).startswith("messages[7] (assistant): tool call 'c9'")
    # A refused request leaves the remembered conversation as it was.
    longer = messages + turn(3)
    assert cache.normalize(longer).length == len(longer)


def test_a_changed_message_is_checked_again(checked):
    cache, messages = ConversationCache(), conversation(2)
    cache.normalize(messages)
    edited = [*messages[:2], {**messages[2], "content": "changed"}, *messages[3:]]
    assert cache.normalize(edited).messages[2]["content"] == "changed"
    assert checked == [len(messages), len(edited)]  # not the same objects: all checked again


def test_scripted_calls_share_the_conversation_and_hand_out_copies():
    provider = ScriptedProvider(["one", "two"])
    messages = [{"role": "user", "content": "hi"}]
    first = anyio.run(provider.complete, messages)
    messages = [*messages, first.message, {"role": "user", "content": "and?"}]
    anyio.run(provider.complete, messages)
    seen = provider.calls[1].messages
    seen[0]["content"] = "mutated"
    assert provider.calls[1].messages[0]["content"] == "hi"
    assert [m["content"] for m in provider.calls[0].messages] == ["hi"]
    assert len(provider.calls[1].messages) == 3


def test_copy_messages_copies_nested_parts():
    original = [{"role": "user", "content": [{"type": "text", "text": "a"}]}]
    copied = copy_messages(original)
    copied[0]["content"][0]["text"] = "b"
    assert original[0]["content"][0]["text"] == "a"


def agent_memory(turns: int) -> int:
    """Bytes still allocated after an agent run of `turns` turns (provider and state kept)."""
    replies = [
        {"tool_calls": [{"name": "add", "arguments": {"a": i, "b": 1}}]} for i in range(turns)
    ]
    provider = ScriptedProvider([*replies, "done"])
    root = react_agent(
        "A",
        tools=[add],
        provider=provider,
        goal="go",
        system_prompt="be brief",
        max_iterations=turns + 1,
    )
    gc.collect()
    tracemalloc.start()
    try:
        result = TreeRunner(root, StateManager(AgentState)).run(timeout=120)
        gc.collect()
        current, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.ok and len(provider.calls) == turns + 1
    return current


def test_an_agent_run_checks_each_message_once_and_keeps_linear_memory(checked):
    agent_memory(5)  # first-use allocations (imports, caches) are not the run's
    checked.clear()
    small = agent_memory(60)
    # system + goal + two messages a turn; each request checks only what is new since the last
    assert sum(checked) == 2 + 2 * 60
    checked.clear()
    large = agent_memory(240)
    assert sum(checked) == 2 + 2 * 240
    assert large < 5.5 * small  # four times the turns: linear, not sixteen times (quadratic)


def test_a_copied_or_pickled_provider_starts_with_an_empty_cache():
    provider = ScriptedProvider(["one", "two"])
    anyio.run(provider.complete, [{"role": "user", "content": "hi"}])
    for clone in (copy.deepcopy(provider), pickle.loads(pickle.dumps(provider))):
        reply = anyio.run(clone.complete, [{"role": "user", "content": "again"}])
        assert reply.text == "two"

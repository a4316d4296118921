"""CallOptions and ExecutorOptions: one immutable, validated options object per tool node."""

import dataclasses

import pytest

from jianmu_bt.nodes import (
    CallOptions,
    ExecutorOptions,
    RetryPolicy,
    ToolExecutor,
    ToolNode,
    react_agent,
)
from jianmu_bt.tools import tool


@tool
def echo(text: str) -> str:
    """Echo."""
    return text


def test_defaults_make_no_retry_and_no_limit():
    options = ExecutorOptions()
    assert options.retry.max_retries == 0 and options.call_timeout is None
    assert (options.execution_mode, options.max_concurrency) == ("auto", 1000)
    assert (options.actions_key, options.messages_key) == ("actions", "messages")
    assert (options.effects_key, options.guard_key) == ("tool_effects", "guard")
    assert isinstance(options, CallOptions)


def test_options_are_immutable():
    options = CallOptions(call_timeout=5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.call_timeout = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kind", "values", "message"),
    [
        (CallOptions, {"call_timeout": 0}, "call_timeout must be a number of seconds more than 0"),
        (CallOptions, {"call_timeout": "5"}, "call_timeout must be a number of seconds"),
        (CallOptions, {"retry": 3}, "retry must be a RetryPolicy"),
        (ExecutorOptions, {"execution_mode": "fast"}, "execution_mode must be auto, serial or"),
        (ExecutorOptions, {"max_concurrency": 0}, "max_concurrency must be a whole number of at"),
        (ExecutorOptions, {"max_concurrency": True}, "max_concurrency must be a whole number"),
        (ExecutorOptions, {"actions_key": ""}, "actions_key must be a state field name"),
        (ExecutorOptions, {"guard_key": 1}, "guard_key must be a state field name or None"),
        (ExecutorOptions, {"call_timeout": -1}, "call_timeout must be a number of seconds"),
    ],
)
def test_a_bad_value_is_refused_with_its_name(kind, values, message):
    with pytest.raises(ValueError, match=message):
        kind(**values)


def test_nodes_take_their_options_and_refuse_other_objects():
    options = CallOptions(retry=RetryPolicy.from_retries(2, 0.1), call_timeout=3)
    assert ToolNode(echo, options=options).options is options
    assert echo.as_node(options=options).options is options
    assert ToolExecutor([echo]).options == ExecutorOptions()
    with pytest.raises(TypeError, match="options must be ExecutorOptions"):
        ToolExecutor([echo], options=options)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="options must be CallOptions"):
        ToolNode(echo, options={"call_timeout": 3})  # type: ignore[arg-type]


def test_an_agents_executor_uses_the_agents_state_keys():
    given = ExecutorOptions(execution_mode="serial", actions_key="other", call_timeout=2)
    agent = react_agent("A", tools=[echo], messages_key="chat", tool_options=given)
    (executor,) = [n for n in agent.iterate() if isinstance(n, ToolExecutor)]
    assert executor.options == dataclasses.replace(
        given, actions_key="actions", messages_key="chat"
    )

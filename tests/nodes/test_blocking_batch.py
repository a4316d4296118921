"""ToolExecutor's batch path for sync tools (first attempts together: quick calls on the loop,
blocking ones to the worker threads at once): the same outcome as one call at a time."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Annotated

import pytest
from py_trees.common import Status

from jianmu_bt import ToolCall, tool
from jianmu_bt.guard import GuardEnforcer
from jianmu_bt.nodes import ExecutorOptions, RetryPolicy, ToolExecutor
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner
from jianmu_bt.tools import BuiltinToolProvider, Injected, Tool

WAIT = 10.0


@tool(effect_tags=["lookup"])
def lookup(key: str, times: int = 1) -> str:
    """Look a key up (blocking)."""
    time.sleep(0.001)
    return key * times


@tool
def broken(key: str) -> str:
    """Always raises."""
    raise LookupError(f"no entry for {key}")


@tool
def dict_result(key: str) -> dict:
    """A structured output."""
    return {"key": key, "ok": True, "output": key.upper()}


@tool
async def async_echo(text: str) -> str:
    """An async tool in the same batch."""
    return text


@tool(blocking=False)
def quick(text: str) -> str:
    """A quick sync tool that runs on the loop."""
    return text.upper()


TOOLS = [lookup, broken, dict_result, async_echo, quick]

BATCH = [
    {"id": "c1", "name": "lookup", "arguments": {"key": "ab", "times": 2}},
    {"id": "c2", "name": "broken", "arguments": {"key": "zz"}},
    {"id": "c3", "name": "lookup", "arguments": {"key": "x", "times": "many"}},
    {"id": "c4", "name": "dict_result", "arguments": {"key": "k"}},
    {"id": "c5", "name": "async_echo", "arguments": {"text": "hi"}},
    {"id": "c6", "name": "nope", "arguments": {}},
    {"id": "c7", "name": "lookup", "arguments": "{not json"},
    {"id": "c8", "name": "quick", "arguments": {"text": "q"}},
    {"id": "c9", "name": "lookup", "arguments": {"key": "solo"}},
]


def split(executor: ToolExecutor, calls=None):
    """The executor's split of a batch, as made inside a running asyncio loop."""

    async def inside() -> tuple:
        return executor._together(ToolCall.from_list(calls or BATCH))

    return asyncio.run(inside())


def run_batch(**options):
    state = StateManager(AgentState)
    state.set("actions", ToolCall.from_list(BATCH))
    guard = GuardEnforcer.from_config({"budgets": {"lookup": 10}})
    executor = ToolExecutor(TOOLS, guard=guard, options=ExecutorOptions(**options))
    runner = TreeRunner(executor, state)
    events = []
    runner.events.subscribe(events.append)
    result = runner.run(timeout=WAIT)
    assert result.ok, result.reason
    calls = [
        {k: v for k, v in e.to_dict().items() if k not in ("time", "duration")}
        for e in events
        if e.type.startswith("tool.call.")
    ]
    calls.sort(key=lambda e: (e["call_id"], e["type"]))
    return executor, result, calls, guard


@pytest.mark.parametrize(
    "options",
    [{}, {"call_timeout": 60}, {"retry": RetryPolicy.from_retries(1, 0)}],
    ids=["plain", "timeout", "retries"],
)
def test_the_batch_path_answers_and_reports_like_the_per_call_path(options):
    batched, result, events, guard = run_batch(**options)
    # A serial batch makes every call through the per-call path (the timeout never fires).
    _, result_single, events_single, guard_single = run_batch(execution_mode="serial", **options)
    assert split(batched)[0]

    assert result.state["messages"] == result_single.state["messages"]
    assert events == events_single
    counts = guard.snapshot()["context"], guard_single.snapshot()["context"]
    # The three tools that declare nothing and succeeded count as `unknown` effects, both ways.
    effects = {"lookup": 2, "unknown": 3}
    assert counts[0]["effect_counts"] == counts[1]["effect_counts"] == effects
    assert {k: len(v) for k, v in counts[0]["call_times"].items()} == {
        k: len(v) for k, v in counts[1]["call_times"].items()
    }
    assert result.state["tool_effects"] == result_single.state["tool_effects"] == effects

    contents = {m["tool_call_id"]: m["content"] for m in result.state["messages"]}
    assert contents["c1"] == "abab" and contents["c9"] == "solo"
    assert contents["c2"] == "Error: LookupError: no entry for zz"
    assert contents["c3"].startswith("Error: invalid arguments for tool 'lookup'")
    assert "times" in contents["c3"]
    assert contents["c4"] == "K"
    assert contents["c5"] == "hi" and contents["c8"] == "Q"
    assert "unknown tool 'nope'" in contents["c6"]
    assert "not a valid JSON object" in contents["c7"]
    assert [m["tool_call_id"] for m in result.state["messages"]] == [c["id"] for c in BATCH]


def test_which_calls_go_to_the_worker_threads_together():
    @tool(timeout=5)
    def limited(key: str) -> str:
        """Has its own timeout."""
        return key

    executor = ToolExecutor([*TOOLS, limited])
    TreeRunner(executor, StateManager(AgentState))
    calls = ToolCall.from_list(
        [
            *BATCH,
            {"id": "c10", "name": "limited", "arguments": {"key": "k"}},
        ]
    )
    together, alone = split(executor, calls)
    # Sync tools (in threads or on the loop), with or without a timeout: together.
    assert [c.id for _, c in together] == ["c1", "c2", "c3", "c4", "c8", "c9", "c10"]
    # An async tool, an unknown tool, arguments that are not JSON: a task each.
    assert [c.id for c in alone] == ["c5", "c6", "c7"]
    retrying = ExecutorOptions(retry=RetryPolicy.from_retries(1))
    retrying = ToolExecutor([*TOOLS, limited], options=retrying)
    TreeRunner(retrying, StateManager(AgentState))
    assert split(retrying, calls) == (together, alone)
    assert executor._together(calls)[0] == []  # no asyncio loop running: per call


def test_blocking_calls_of_a_batch_run_at_the_same_time():
    barrier = threading.Barrier(4, timeout=WAIT)

    @tool
    def meet(i: int) -> int:
        """Waits until all four calls are inside."""
        return barrier.wait() * 0 + i

    state = StateManager(AgentState)
    state.set("actions", [ToolCall("meet", {"i": i}, f"m{i}") for i in range(4)])
    assert TreeRunner(ToolExecutor([meet]), state).run(timeout=WAIT).ok
    assert [m["content"] for m in state.get("messages")] == ["0", "1", "2", "3"]


def test_a_halt_keeps_the_blocking_calls_that_finished():
    release = threading.Event()

    @tool
    def step(tag: str) -> str:
        """Blocks for tag 'b' until released."""
        if tag == "b":
            release.wait(WAIT)
        return tag

    state = StateManager(AgentState)
    state.set("actions", [ToolCall("step", {"tag": t}, f"c_{t}") for t in "abc"])
    halted = TreeRunner(ToolExecutor([step]), state).run(timeout=0.5)
    release.set()
    assert halted.status == Status.FAILURE
    assert sorted(m["tool_call_id"] for m in state.get("messages")) == ["c_a", "c_c"]
    assert [c.id for c in state.get("actions")] == ["c_a", "c_b", "c_c"]
    assert TreeRunner(ToolExecutor([step]), state).run(timeout=WAIT).ok
    assert sorted(m["tool_call_id"] for m in state.get("messages")) == ["c_a", "c_b", "c_c"]


@pytest.mark.parametrize("options", [{}, {"call_timeout": 60}], ids=["together", "per-call"])
def test_an_exception_that_is_not_a_tool_fault_propagates(options):
    class Stop(BaseException):
        pass

    @tool
    def stop() -> None:
        """Raises a BaseException."""
        raise Stop()

    state = StateManager(AgentState)
    state.set("actions", [ToolCall("stop", {}, "s1"), ToolCall("lookup", {"key": "k"}, "s2")])
    with pytest.raises(BaseException) as caught:
        executor = ToolExecutor([stop, lookup], options=ExecutorOptions(**options))
        TreeRunner(executor, state).run(timeout=WAIT)
    assert caught.group_contains(Stop, depth=None) or caught.type is Stop


def test_tools_that_change_how_they_execute_are_never_run_here_in_a_thread():
    class Routed(Tool):
        """A sync tool whose execute goes elsewhere (as a sandboxed tool's does)."""

        name = "routed"
        input_schema = {"type": "object", "properties": {"x": {"type": "integer"}}}

        def run(self, input):
            raise AssertionError("run in-process")

        async def execute(self, args=None, injected=None, runner=None, prefer_injected=True):
            return f"routed {args['x']}"

    repl = BuiltinToolProvider(["python_repl"]).get_tools()[0]
    assert not repl._runs_in_a_thread and not Routed()._runs_in_a_thread
    assert lookup._runs_in_a_thread
    parallel = ExecutorOptions(execution_mode="parallel")
    executor = ToolExecutor([Routed(), repl, lookup], options=parallel)
    calls = [
        {"id": "r1", "name": "routed", "arguments": {"x": 1}},
        {"id": "p1", "name": "python_repl", "arguments": {"code": "print(1)"}},
        {"id": "p2", "name": "python_repl", "arguments": {"code": "print(2)"}},
        {"id": "l1", "name": "lookup", "arguments": {"key": "k"}},
    ]
    TreeRunner(executor, StateManager(AgentState))
    together, _ = split(executor, calls)
    assert [c.id for _, c in together] == ["l1"]
    state = StateManager(AgentState)
    state.set("actions", ToolCall.from_list(calls))
    try:
        assert TreeRunner(executor, state).run(timeout=60).ok
    finally:
        asyncio.run(repl.aclose())  # the sandbox the tool started for itself
    contents = {m["tool_call_id"]: m["content"] for m in state.get("messages")}
    assert contents["r1"] == "routed 1" and contents["l1"] == "k"
    # python_repl went through its own execute: a sandbox, not a thread of this process.
    assert json.loads(contents["p1"])["stdout"] == "1\n"
    assert json.loads(contents["p2"])["stdout"] == "2\n"


def test_a_tool_that_takes_an_idempotency_key_gets_it_in_a_parallel_batch():
    @tool
    def keyed(name: str, idempotency_key: Annotated[str, Injected]) -> str:
        """Echoes its idempotency key."""
        return f"{name} {idempotency_key}"

    state = StateManager(AgentState)
    state.set("actions", [ToolCall("keyed", {"name": n}, f"k_{n}") for n in "ab"])
    assert TreeRunner(ToolExecutor([keyed]), state).run(timeout=WAIT).ok
    assert [m["content"] for m in state.get("messages")] == ["a k_a", "b k_b"]

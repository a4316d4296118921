"""ToolExecutor: batches of ToolCalls, modes, retries, observations, effects."""

import threading

import anyio
from py_trees.common import Status

from jianmu_bt import ToolCall, ToolSet, tool
from jianmu_bt.nodes import ExecutorOptions, RetryPolicy, ToolExecutor
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner

active = {"now": 0, "peak": 0}
lock = threading.Lock()


async def _track(seconds):
    with lock:
        active["now"] += 1
        active["peak"] = max(active["peak"], active["now"])
    await anyio.sleep(seconds)
    with lock:
        active["now"] -= 1


@tool(effect_tags=["net"])
async def fetch(url: str) -> str:
    """Fetch (parallel-safe)."""
    await _track(0.05)
    return f"page {url}"


@tool(parallel_safe=False, effect_tags=["file_write"])
async def save(path: str) -> str:
    """Save (not parallel-safe)."""
    await _track(0.05)
    return f"saved {path}"


@tool
def broken() -> str:
    """Always raises."""
    raise RuntimeError("disk on fire")


def execute(calls, toolset=None, **options):
    active.update(now=0, peak=0)
    state = StateManager(AgentState)
    state.set("actions", ToolCall.from_list(calls))
    tools = toolset or ToolSet.from_tools([fetch, save, broken])
    executor = ToolExecutor(tools, options=ExecutorOptions(**options))
    runner = TreeRunner(executor, state)
    return executor, runner.run()


def test_empty_batch_succeeds_without_messages():
    _, result = execute([])
    assert result.ok and result.state["messages"] == []


def test_parallel_safe_batch_runs_in_parallel():
    _, result = execute([{"name": "fetch", "arguments": {"url": str(i)}} for i in range(5)])
    assert result.ok and active["peak"] == 5
    assert len(result.state["messages"]) == 5


def test_mixed_batch_runs_serially_in_auto_mode():
    calls = [
        {"name": "fetch", "arguments": {"url": "a"}},
        {"name": "save", "arguments": {"path": "p"}},
        {"name": "fetch", "arguments": {"url": "b"}},
    ]
    executor, result = execute(calls)
    assert result.ok and active["peak"] == 1
    assert executor.resolve_mode(ToolCall.from_list(calls)) == "serial"


def test_forced_parallel_and_bounded_concurrency():
    calls = [{"name": "fetch", "arguments": {"url": str(i)}} for i in range(6)]
    _, result = execute(calls, execution_mode="parallel", max_concurrency=2)
    assert result.ok and active["peak"] == 2


def test_one_message_per_call_in_batch_order_with_ids():
    calls = [
        {"id": "c1", "name": "fetch", "arguments": '{"url": "x"}'},
        {"name": "broken", "arguments": {}},
        {"id": "c3", "name": "nope", "arguments": {}},
        {"id": "c4", "name": "fetch", "arguments": "{not json"},
    ]
    _, result = execute(calls)
    messages = result.state["messages"]
    assert [m["role"] for m in messages] == ["tool"] * 4
    assert messages[0] == {
        "role": "tool",
        "tool_call_id": "c1",
        "name": "fetch",
        "content": "page x",
    }
    assert messages[1]["tool_call_id"].startswith("call_")
    assert messages[1]["content"] == "Error: RuntimeError: disk on fire"
    assert "unknown tool 'nope'" in messages[2]["content"]
    assert "not a valid JSON object" in messages[3]["content"] and "url" in messages[3]["content"]
    assert result.state["actions"] == []


def test_failing_call_keeps_siblings_results_in_parallel():
    calls = [
        {"id": "a", "name": "fetch", "arguments": {"url": "1"}},
        {"id": "b", "name": "broken", "arguments": {}},
        {"id": "c", "name": "fetch", "arguments": {"url": "2"}},
    ]
    executor, result = execute(calls, execution_mode="parallel")
    assert result.ok
    assert executor.last_results["a"].ok and executor.last_results["c"].ok
    assert not executor.last_results["b"].ok


def test_effects_are_counted_per_tag_for_successful_calls():
    calls = [
        {"name": "fetch", "arguments": {"url": "1"}},
        {"name": "fetch", "arguments": {"url": "2"}},
        {"name": "save", "arguments": {"path": "p"}},
        {"name": "broken", "arguments": {}},
    ]
    _, result = execute(calls)
    assert result.state["tool_effects"] == {"net": 2, "file_write": 1}


def test_retries_with_backoff_and_events():
    attempts = []

    @tool
    async def flaky() -> str:
        """Fails twice, then works."""
        attempts.append(1)
        if len(attempts) < 3:
            return "Error: temporarily unavailable"
        return "ok"

    state = StateManager(AgentState)
    state.set("actions", [ToolCall("flaky", {})])
    retry = ExecutorOptions(retry=RetryPolicy.from_retries(2, 0.01))
    executor = ToolExecutor([flaky], options=retry)
    runner = TreeRunner(executor, state)
    events = []
    runner.events.subscribe(events.append)
    result = runner.run()
    assert result.state["messages"][0]["content"] == "ok" and len(attempts) == 3
    assert [e.data["attempt"] for e in events if e.type == "tool.call.retry"] == [1, 2]


def test_invalid_arguments_are_not_retried():
    calls = []

    @tool
    def strict(n: int) -> int:
        """Strict."""
        calls.append(n)
        return n

    state = StateManager(AgentState)
    state.set("actions", [ToolCall("strict", {"n": "many"})])
    retry = ExecutorOptions(retry=RetryPolicy.from_retries(3, 0.01))
    TreeRunner(ToolExecutor([strict], options=retry), state).run()
    assert (
        calls == [] and "n: Input should be a valid integer" in state.get("messages")[0]["content"]
    )


def test_hanging_tool_is_ended_by_call_timeout():
    @tool
    async def hang() -> str:
        """Never returns."""
        await anyio.sleep(60)
        return "never"

    state = StateManager(AgentState)
    state.set("actions", [ToolCall("hang", {})])
    executor = ToolExecutor([hang], options=ExecutorOptions(call_timeout=0.05))
    result = TreeRunner(executor, state).run()
    assert result.ok and "timed out after 0.05s" in result.state["messages"][0]["content"]


def test_calls_already_answered_are_not_run_again():
    ran = []

    @tool
    def once(tag: str) -> str:
        """Record a run."""
        ran.append(tag)
        return tag

    state = StateManager(AgentState)
    state.set(
        "actions", [ToolCall("once", {"tag": "a"}, "c1"), ToolCall("once", {"tag": "b"}, "c2")]
    )
    state.append_port_messages(
        {"role": "tool", "tool_call_id": "c1", "name": "once", "content": "a"}
    )
    TreeRunner(ToolExecutor([once]), state).run()
    assert ran == ["b"]


def test_register_tool_adds_to_the_set():
    executor = ToolExecutor([])
    executor.register_tool(fetch)
    assert executor.toolset.names() == ["fetch"]


def test_executor_never_declares_the_agent_finished():
    _, result = execute([{"name": "fetch", "arguments": {"url": "x"}}])
    assert result.status == Status.SUCCESS and result.state["final_answer"] is None


def test_ids_reused_in_an_earlier_turn_do_not_count_as_answered():
    ran = []

    @tool
    def once(tag: str) -> str:
        """Record a run."""
        ran.append(tag)
        return tag

    state = StateManager(AgentState)
    state.append_port_messages(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [ToolCall("once", {"tag": "old"}, "call_0").to_openai()],
        },
        {"role": "tool", "tool_call_id": "call_0", "name": "once", "content": "old"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [ToolCall("once", {"tag": "new"}, "call_0").to_openai()],
        },
    )
    state.set("actions", [ToolCall("once", {"tag": "new"}, "call_0")])
    TreeRunner(ToolExecutor([once]), state).run()
    assert ran == ["new"]


def test_an_empty_toolset_keeps_its_runner():
    class Runner:
        async def run(self, tool, args):
            return "x"

    runner = Runner()
    assert ToolExecutor(ToolSet(runner=runner)).toolset.runner is runner


def test_a_halt_mid_batch_keeps_finished_calls_and_the_rest_run_later():
    ran = []
    release = {"hang": True}

    @tool(parallel_safe=False)
    async def step(tag: str) -> str:
        """A step that may hang."""
        if tag == "b" and release["hang"]:
            await anyio.sleep(60)
        ran.append(tag)
        return tag

    state = StateManager(AgentState)
    state.set(
        "actions", [ToolCall("step", {"tag": "a"}, "c1"), ToolCall("step", {"tag": "b"}, "c2")]
    )
    halted = TreeRunner(ToolExecutor([step]), state).run(timeout=0.5)
    assert halted.status == Status.FAILURE and ran == ["a"]
    assert [m["tool_call_id"] for m in state.get("messages")] == ["c1"]
    assert [c.id for c in state.get("actions")] == ["c1", "c2"]
    release["hang"] = False
    assert TreeRunner(ToolExecutor([step]), state).run(timeout=5).ok
    assert ran == ["a", "b"]  # a did not run twice
    assert state.get("actions") == []


def test_two_calls_with_the_same_id_are_both_answered():
    calls = [
        {"id": "dup", "name": "fetch", "arguments": {"url": "1"}},
        {"id": "dup", "name": "fetch", "arguments": {"url": "2"}},
    ]
    _, result = execute(calls)
    messages = result.state["messages"]
    assert [m["content"] for m in messages] == ["page 1", "page 2"]
    assert messages[0]["tool_call_id"] == "dup" and messages[1]["tool_call_id"] != "dup"

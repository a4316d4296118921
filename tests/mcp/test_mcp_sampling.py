"""MCP sampling answered by a tree's LLM, under its guard, through loaded YAML trees.

Servers are real processes: `mcp_sampling_server.py` (the official SDK's MCPServer, which asks on
the 2026-07-28 protocol through `InputRequiredResult`) and the reference server-everything (its
`trigger-sampling-request` asks over the legacy back-channel). Only the LLM's replies are
scripted, except in the test whose LLM is the OpenAI-compatible HTTP provider talking to a
local server on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_test_support import HERE, PYTHON, everything_command, run_docs_demo

from jianmu_bt.cli import main
from jianmu_bt.llm import AnthropicProvider, LLMResponse, ScriptedProvider, Usage
from jianmu_bt.loader import load_tree
from jianmu_bt.runtime.events import TraceWriter, read_trace

sys.path.insert(0, str(HERE.parent / "llm"))  # the fake OpenAI server of the LLM tests
from llm_fake_server import FakeLLMServer, Reply
from llm_replies import anthropic_message, openai_completion

SAMPLER = str(HERE / "mcp_sampling_server.py")
HANG_GUARD = 60


def tree_text(
    steps: str, *, sampling: str = "true", guard: str = "", llm: str | None = None
) -> str:
    """A tree with the sampling server (`sampler`), a scripted LLM, and `steps` in a sequence;
    `sampling=""` leaves the option out."""
    llm = llm if llm is not None else '{provider: scripted, replies: ["one", "two", "three"]}'
    option = f", sampling: {sampling}" if sampling else ""
    return f"""
state: {{first: string, second: string}}
{f"llm: {llm}" if llm else ""}
{f"guard: {guard}" if guard else ""}
tools:
  - mcp: {{command: {PYTHON}, args: [{SAMPLER}], name: sampler, timeout: 20{option}}}
root:
  sequence:
    children:
{steps}
"""


ASK_TWICE = """
      - tool: {name: First, tool: ask, arguments: {prompt: "hi"}, output: first}
      - failure_is_success:
          child: {tool: {name: Second, tool: ask, arguments: {prompt: "again"}, output: second}}
"""


def run_traced(text: str, tmp_path: Path) -> tuple[Any, list[dict[str, Any]], Any]:
    """Run the tree; its result, its trace's events and its LLM provider."""
    trace = tmp_path / "trace.jsonl"
    with load_tree(text) as tree, TraceWriter(trace) as writer:
        tree.events.subscribe(writer)
        result = tree.run(timeout=HANG_GUARD)
        llm = tree.runner.context.llm
    return result, read_trace(trace), llm


def failures(events: list[dict[str, Any]]) -> list[str]:
    return [str(e["error"]) for e in events if e["type"] == "tool.call.failed"]


def test_a_server_tool_gets_the_tree_llms_reply_with_max_tokens_capped(tmp_path: Path) -> None:
    step = """
      - tool:
          name: Ask
          tool: ask
          arguments: {prompt: "say hi", max_tokens: 5000, stop: ["END"]}
          output: first
"""
    result, events, llm = run_traced(tree_text(step, sampling="{max_tokens: 64}"), tmp_path)
    assert result.ok, result.reason
    assert result.state["first"] == "model said: one (model scripted, stop endTurn)"
    [call] = llm.calls
    assert call.messages == [
        {"role": "system", "content": "You answer tools."},
        {"role": "user", "content": "say hi"},
    ]
    assert call.options.max_tokens == 64  # the server asked for 5000
    assert call.options.temperature == 0.5
    assert call.options.extra == {"stop": ["END"]}
    [sampled] = [e for e in events if e["type"] == "mcp.sampling"]
    assert (sampled["server"], sampled["tool"], sampled["outcome"]) == (
        "sampler",
        "sampler_sampling",
        "answered",
    )
    assert sampled["max_tokens"] == 64
    types = [e["type"] for e in events]
    assert types.index("tool.call.started") < types.index("mcp.sampling")
    assert types.index("mcp.sampling") < types.index("tool.call.completed")


def test_sampling_is_off_by_default(tmp_path: Path) -> None:
    result, events, llm = run_traced(tree_text(ASK_TWICE, sampling=""), tmp_path)
    assert not result.ok  # the first step failed: nothing answered the server
    assert "Sampling not supported" in failures(events)[0]
    assert llm.calls == []
    assert not [e for e in events if e["type"] == "mcp.sampling"]


@pytest.mark.parametrize(
    ("guard", "why"),
    [
        ("{budgets: {sampling: 1}}", "budget"),
        ('{rate_limits: {sampler_sampling: "1/1h"}}', "rate_limit"),
    ],
)
def test_a_sampling_budget_refuses_the_second_request_and_the_tree_goes_on(
    guard: str, why: str, tmp_path: Path
) -> None:
    text = tree_text(ASK_TWICE, guard=guard)
    result, events, llm = run_traced(text, tmp_path)
    assert result.ok, result.reason  # the refused second step is tolerated by the tree
    assert result.state["first"].startswith("model said: one")
    assert result.state["second"] is None
    assert len(llm.calls) == 1
    [refused] = failures(events)
    assert "the run's guard refused 'sampler_sampling' (deny)" in refused
    assert why in refused
    outcomes = [e["outcome"] for e in events if e["type"] == "mcp.sampling"]
    assert outcomes == ["answered", "refused"]


def test_a_deny_list_names_the_stand_in_tool(tmp_path: Path) -> None:
    text = tree_text(ASK_TWICE, guard="{deny: [sampler_sampling]}")
    result, events, llm = run_traced(text, tmp_path)
    assert not result.ok
    assert llm.calls == []
    assert (
        "the run's guard refused 'sampler_sampling' (deny): policy deny_list"
        in (failures(events)[0])
    )


def test_sampling_that_needs_approval_is_refused_leaving_nothing_pending(tmp_path: Path) -> None:
    text = tree_text(ASK_TWICE, guard="{approve: [sampler_sampling]}")
    with load_tree(text) as tree:
        result = tree.run(timeout=HANG_GUARD)
        assert not result.ok
        assert "approval of sampling is not supported" in str(result.reason)
        assert tree.pending_approvals() == []
        assert tree.runner.context.llm.calls == []


def test_a_sampling_loop_is_bounded_by_max_requests(tmp_path: Path) -> None:
    step = """
      - failure_is_success:
          child: {tool: {name: Loop, tool: ask_loop, arguments: {times: 8}, output: first}}
      - tool: {name: After, tool: ask, arguments: {prompt: "after"}, output: second}
"""
    llm = '{provider: scripted, replies: ["a", "b", "c", "d", "e"]}'
    text = tree_text(step, sampling="{max_requests: 3}", llm=llm)
    result, events, provider = run_traced(text, tmp_path)
    assert not result.ok  # `After` is refused too: the run's 3 requests are used up
    assert len(provider.calls) == 3
    loop_error, after_error = failures(events)
    for error in (loop_error, after_error):
        assert "asked for more than 3 sampling requests in this run" in error
        assert "`sampling: {max_requests: 3}`" in error
    outcomes = [e["outcome"] for e in events if e["type"] == "mcp.sampling"]
    assert outcomes == ["answered"] * 3 + ["refused"] * 2


def test_a_tree_without_an_llm_refuses_clearly(tmp_path: Path) -> None:
    result, events, _ = run_traced(tree_text(ASK_TWICE, llm=""), tmp_path)
    assert not result.ok
    assert "the tree has no llm: MCP server 'sampler' asked for sampling" in failures(events)[0]


@pytest.fixture
def openai_server() -> Iterator[FakeLLMServer]:
    server = FakeLLMServer()
    server.start()
    yield server
    server.stop()


def test_the_openai_compatible_provider_answers_over_http(
    openai_server: FakeLLMServer, tmp_path: Path
) -> None:
    openai_server.script(Reply(json=openai_completion("hello over http", usage=(12, 3))))
    llm = f"{{provider: openai_compatible, base_url: '{openai_server.url}/v1', model: m1}}"
    step = """
      - tool: {name: Ask, tool: ask, arguments: {prompt: "hi", max_tokens: 9000}, output: first}
"""
    result, events, _ = run_traced(tree_text(step, llm=llm), tmp_path)
    assert result.ok, result.reason
    assert result.state["first"] == "model said: hello over http (model fake-model, stop endTurn)"
    [request] = openai_server.requests
    body = request.body
    assert body["messages"] == [
        {"role": "system", "content": "You answer tools."},
        {"role": "user", "content": "hi"},
    ]
    assert body.get("max_tokens", body.get("max_completion_tokens")) == 1024  # the default cap
    [sampled] = [e for e in events if e["type"] == "mcp.sampling"]
    assert (sampled["input_tokens"], sampled["output_tokens"]) == (12, 3)


def test_server_everything_sampling_demo_through_a_tree(tmp_path: Path) -> None:
    command = everything_command()
    text = f"""
state: {{first: string, second: string}}
llm: {{provider: scripted, replies: ["from the tree", "again"]}}
tools:
  - mcp:
      command: {command}
      args: [stdio]
      name: everything
      timeout: 20
      sampling: {{max_requests: 2, max_tokens: 50}}
root:
  sequence:
    children:
      - tool:
          name: Demo
          tool: trigger-sampling-request
          arguments: {{prompt: "What is MCP?", maxTokens: 500}}
          output: first
      - tool: {{name: Again, tool: trigger-sampling-request, arguments: {{prompt: "x"}}}}
      - failure_is_success:
          child:
            tool: {{name: Third, tool: trigger-sampling-request, arguments: {{prompt: "y"}}}}
"""
    result, events, llm = run_traced(text, tmp_path)
    assert result.ok, result.reason
    reply = json.loads(result.state["first"].split("\n", 1)[1])
    assert reply == {
        "model": "scripted",
        "stopReason": "endTurn",
        "role": "assistant",
        "content": {"type": "text", "text": "from the tree"},
    }
    first = llm.calls[0]
    assert first.messages == [
        {"role": "system", "content": "You are a helpful test server."},
        {"role": "user", "content": "Resource trigger-sampling-request context: What is MCP?"},
    ]
    assert first.options.max_tokens == 50
    assert first.options.temperature == 0.7
    assert len(llm.calls) == 2  # the third request is over `max_requests`: refused
    assert "asked for more than 2 sampling requests" in failures(events)[0]


def test_jianmu_run_watch_shows_each_sampling_request(tmp_path: Path) -> None:
    tree = tmp_path / "sampling.yaml"
    tree.write_text(tree_text(ASK_TWICE, guard="{budgets: {sampling: 1}}"))
    env = {**os.environ, "PYTHONPATH": str(HERE.parents[1]), "TERM": "dumb"}
    done = subprocess.run(
        [sys.executable, "-m", "jianmu_bt.cli", "run", str(tree), "--watch"],
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line.strip() for line in done.stdout.splitlines() if "sampling" in line]
    assert lines[0] == "> sampler: sampling answered"
    assert lines[1].startswith("> sampler: sampling refused: the run's guard refused")


def test_a_halted_call_cancels_the_llm_call_answering_its_sampling(tmp_path: Path) -> None:
    started, cancelled = threading.Event(), threading.Event()

    async def slow_model(messages: Any, tools: Any) -> str:
        started.set()
        try:
            await anyio.sleep(HANG_GUARD)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        return "too late"

    step = """
      - timeout:
          duration: 2
          child: {tool: {name: Ask, tool: ask, arguments: {prompt: "hi"}, output: first}}
"""
    with load_tree(tree_text(step, llm=""), llm=ScriptedProvider(slow_model)) as tree:
        result = tree.run(timeout=HANG_GUARD)
    assert not result.ok
    assert started.is_set() and cancelled.is_set()
    assert result.state["first"] is None


def outcomes(events: list[dict[str, Any]]) -> list[str]:
    return [e["outcome"] for e in events if e["type"] == "mcp.sampling"]


def test_a_prompt_over_max_input_chars_is_refused_before_the_llm(tmp_path: Path) -> None:
    step = """
      - tool: {name: Short, tool: ask, arguments: {prompt: "hi"}, output: first}
      - failure_is_success:
          child:
            tool: {name: Long, tool: ask, arguments: {prompt: "a long prompt"}, output: second}
"""
    # The server's system prompt "You answer tools." is 17 characters: +2 fits, +13 does not.
    text = tree_text(step, sampling="{max_input_chars: 20}")
    result, events, llm = run_traced(text, tmp_path)
    assert result.ok, result.reason
    assert result.state["second"] is None
    assert len(llm.calls) == 1  # the long prompt never reached the LLM
    [refused] = failures(events)
    assert "prompt has 30 characters, more than the 20 allowed" in refused
    assert "`sampling: {max_input_chars: 20}`" in refused
    assert outcomes(events) == ["answered", "refused"]


def test_a_slow_llm_holds_the_servers_call_deadline_within_the_sampling_timeout(
    tmp_path: Path,
) -> None:
    cancelled = threading.Event()

    async def model(messages: Any, tools: Any) -> str:
        if messages[-1]["content"] == "hi":  # slower than the entry's `timeout: 1`
            await anyio.sleep(1.5)
            return "slow but in time"
        try:
            await anyio.sleep(HANG_GUARD)  # slower than `sampling: {timeout: 3}`
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        return "too late"

    text = tree_text(ASK_TWICE, sampling="{timeout: 3}", llm="")
    text = text.replace("timeout: 20", "timeout: 1")  # the entry's call timeout
    trace = tmp_path / "trace.jsonl"
    with load_tree(text, llm=ScriptedProvider(model)) as tree, TraceWriter(trace) as writer:
        tree.events.subscribe(writer)
        result = tree.run(timeout=HANG_GUARD)
    events = read_trace(trace)
    assert result.ok, result.reason
    assert result.state["first"].startswith("model said: slow but in time")
    [timed_out] = failures(events)
    assert "did not answer within 3s (option `sampling: {timeout: 3}`" in timed_out
    assert cancelled.is_set()  # the LLM call was stopped, not left running
    assert outcomes(events) == ["answered", "failed"]


class ClaudeOfOurOwn(AnthropicProvider):
    """A subclass, as a user would write one: it still speaks Anthropic's Messages API."""


def test_an_anthropic_provider_subclass_gets_stop_sequences(tmp_path: Path) -> None:
    server = FakeLLMServer()
    server.start()
    try:
        server.script(Reply(json=anthropic_message("from claude")))
        step = """
      - tool: {name: Ask, tool: ask, arguments: {prompt: "hi", stop: ["END"]}, output: first}
"""
        llm = ClaudeOfOurOwn(model="claude-fake", base_url=server.url)
        with load_tree(tree_text(step, llm=""), llm=llm) as tree:
            result = tree.run(timeout=HANG_GUARD)
        [request] = server.requests
    finally:
        server.stop()
    assert result.ok, result.reason
    assert result.state["first"] == "model said: from claude (model claude-fake, stop endTurn)"
    assert request.body["stop_sequences"] == ["END"]
    assert "stop" not in request.body


def test_a_grant_lets_sampling_through_a_confirm_once_then_it_is_refused(
    tmp_path: Path,
) -> None:
    text = tree_text(ASK_TWICE, guard="{confirm: [sampler_sampling]}")
    trace = tmp_path / "trace.jsonl"
    with load_tree(text) as tree, TraceWriter(trace) as writer:
        tree.events.subscribe(writer)
        tree.guard.approvals.grant("sampler_sampling", uses=1)
        result = tree.run(timeout=HANG_GUARD)
        assert tree.pending_approvals() == []  # the refused request left nothing for a reviewer
        assert len(tree.runner.context.llm.calls) == 1
    events = read_trace(trace)
    assert result.ok, result.reason
    assert result.state["first"].startswith("model said: one")
    [refused] = failures(events)
    assert "refused 'sampler_sampling' (it needs a person's approval): policy confirm" in refused
    assert "approval of sampling is not supported" in refused
    assert outcomes(events) == ["answered", "refused"]


def test_a_reply_that_cannot_be_sent_is_one_failed_event_not_answered(tmp_path: Path) -> None:
    # A provider of the user's own whose response skipped validation: no text to send.
    broken = LLMResponse.model_construct(
        message={"role": "assistant"}, tool_calls=[], text=None, usage=Usage(), model=None
    )
    step = """
      - tool: {name: Ask, tool: ask, arguments: {prompt: "hi"}, output: first}
"""
    trace = tmp_path / "trace.jsonl"
    llm = ScriptedProvider(lambda messages, tools: broken)
    with load_tree(tree_text(step, llm=""), llm=llm) as tree, TraceWriter(trace) as writer:
        tree.events.subscribe(writer)
        result = tree.run(timeout=HANG_GUARD)
    events = read_trace(trace)
    assert not result.ok
    assert "the tree's llm gave a reply that cannot be sent" in failures(events)[0]
    assert outcomes(events) == ["failed"]


def test_validate_names_what_sampling_takes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = tree_text(ASK_TWICE, sampling='"on"')
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "sampling:" in row)
    (tmp_path / "bad.yaml").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "bad.yaml"]) == 1
    [error] = [row for row in capsys.readouterr().out.splitlines() if "sampling" in row]
    assert error.startswith(f"bad.yaml:{line}:")
    assert error.endswith(
        "error: in 'mcp.sampling': `sampling` takes `true`, `false` or "
        "`{max_requests, max_tokens, max_input_chars, timeout}`, got 'on'"
    )


def test_the_documented_sampling_demo_runs(tmp_path: Path) -> None:
    done = run_docs_demo("sampling_demo.py", tmp_path, HANG_GUARD)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n") == [
        "answered",
        "refused",
        "old pond / a frog jumps in / water's sound",
        "200",
        "",
    ]

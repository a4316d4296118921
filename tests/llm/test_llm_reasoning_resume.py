"""A YAML agent on a reasoning model, killed with SIGKILL mid-loop and resumed: the resumed run
sends the model exactly the reasoning parts the first process received (from the journal), and
no turn the first process took is asked for again.

The model's turns are real recorded replies (tests/llm/corpus): Anthropic extended thinking
with a signed `thinking` block before its `tool_use`, and DeepSeek's thinking mode streaming
`reasoning_content` before its tool call. The recorded tool-call reply is served for three turns
(its call id made unique per turn), then a recorded answer. The fake server refuses a turn that
comes back without its reasoning, as the real APIs do.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from llm_fake_server import Reply
from recorded import recording, reply

REPO = Path(__file__).resolve().parents[2]
TURNS = 3

TOOLS = '''
import os, time
from pathlib import Path

from jianmu_bt import tool


def _step(name):
    ledger = Path(os.environ["LEDGER"])
    with ledger.open("a") as out:
        out.write(name + "\\n")
    if len(ledger.read_text().splitlines()) == 2:  # the second call waits for the gate
        gate = Path(os.environ["GATE"])
        deadline = time.monotonic() + 60
        while not gate.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
    return "354224848179261915075"


@tool(read_only=True)  # a computation: it may run again after a crash
def compute_fib(n: int) -> str:
    """Compute the nth Fibonacci number (1-indexed)."""
    return _step(f"fib {n}")


@tool(read_only=True)
def customAdditionImplementation(a: int, b: int) -> int:
    """Perform computation on integers."""
    _step(f"add {a} {b}")
    return a + b


@tool(read_only=True)
def get_date() -> str:
    """Gets the current date"""
    return _step("date") and "2024-01-01"
'''

ANTHROPIC = """
version: 1
name: thinking_resume
state: {answer: {type: string}}
tools: ["resume_tools:compute_fib"]
llm:
  provider: anthropic
  model: claude-sonnet-4-0
  base_url: "URL"
  api_key_env: RESUME_TEST_KEY
  max_tokens: 16000
  extra: {thinking: {type: enabled, budget_tokens: 6400}}
  retry: {max_attempts: 1}
root:
  agent:
    name: Solver
    goal: "What is the 100th fibonacci number?"
    tools: [compute_fib]
    max_iterations: 6
    output: answer
"""

DEEPSEEK = """
version: 1
name: deepseek_resume
state: {answer: {type: string}}
tools: ["resume_tools:get_date"]
llm:
  provider: openai
  model: deepseek-reasoner
  base_url: "URL/v1"
  api_key_env: RESUME_TEST_KEY
  retry: {max_attempts: 1}
root:
  agent:
    name: Solver
    system_prompt: "Always use a tool to help you answer. Reply with 'It is ____.'."
    goal: "What's the current date in YYYY-MM-DD format?"
    tools: [get_date]
    stream: true
    max_iterations: 6
    output: answer
"""


GEMINI = """
version: 1
name: gemini_resume
state: {answer: {type: string}}
tools: ["resume_tools:customAdditionImplementation"]
llm:
  provider: gemini
  model: gemini-3-pro-preview
  base_url: "URL"
  api_key_env: RESUME_TEST_KEY
  retry: {max_attempts: 1}
root:
  agent:
    name: Solver
    goal: "Answer this question: What is 2 + 3, using the custom addition tool??"
    tools: [customAdditionImplementation]
    max_iterations: 6
    output: answer
"""


def _numbered(template: Reply, call_id: str, turn: int) -> Reply:
    """`template` with its call id made unique to `turn` (JSON and stream bodies alike)."""
    new = f"{call_id}_{turn}"
    if template.raw is not None:
        body = b"".join(template.raw).replace(call_id.encode(), new.encode())
        return Reply(status=template.status, raw=[body], content_type=template.content_type)
    text = json.dumps(template.json).replace(call_id, new)
    return Reply(status=template.status, json=json.loads(text))


def _script(vendor: str) -> tuple[str, list[Reply], str]:
    """The tree, the replies (three tool turns, then the answer) and the call's recorded id."""
    if vendor == "anthropic":
        calls = recording("anthropic/thinking_tool_use").interactions[0].response
        answer = recording("anthropic/thinking").interactions[0].response
        call_id = next(b["id"] for b in calls.json["content"] if b["type"] == "tool_use")
        tree = ANTHROPIC
    else:
        rec = recording("deepseek/thinking_tool_calls_stream")
        calls, answer = rec.interactions[0].response, rec.interactions[1].response
        call_id = "call_00_tz6Vq4aG59EtpFCVbpoY3635"
        tree = DEEPSEEK
    turns = [_numbered(reply(calls), call_id, turn) for turn in range(1, TURNS + 1)]
    return tree, [*turns, reply(answer)], call_id


def _jianmu(*args, env, cwd, **kw):
    command = [sys.executable, "-m", "jianmu_bt.cli", *map(str, args)]
    return subprocess.Popen(command, env=env, cwd=cwd, **kw)


def _assistant_turns(body: dict, vendor: str) -> list:
    messages = body["messages"]
    turns = [m for m in messages if m["role"] == "assistant"]
    if vendor == "anthropic":
        return [turn["content"] for turn in turns]
    return [(turn.get("reasoning_content"), turn["tool_calls"]) for turn in turns]


def _kill_and_resume(tmp_path: Path, tree: str, url: str, requests: list) -> str:
    """Run `tree` in a process, SIGKILL it inside its second tool call (after two LLM turns),
    resume it; the resumed process's output. `requests` is the server's list of requests."""
    (tmp_path / "tree.yaml").write_text(tree.replace("URL", url))
    (tmp_path / "resume_tools.py").write_text(textwrap.dedent(TOOLS))
    ledger, gate, db = tmp_path / "ledger", tmp_path / "gate", tmp_path / "runs.db"
    env = {
        **os.environ,
        "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}",
        "LEDGER": str(ledger),
        "GATE": str(gate),
        "RESUME_TEST_KEY": "test-key",
        "TERM": "dumb",
    }
    first = _jianmu("run", "tree.yaml", "--store", db, "--run-id", "R", env=env, cwd=tmp_path,
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 60
    while not (ledger.exists() and len(ledger.read_text().splitlines()) == 2):
        assert first.poll() is None, first.stderr.read().decode() if first.stderr else ""
        assert time.monotonic() < deadline, "the run never reached its second tool call"
        time.sleep(0.01)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    assert len(requests) == 2
    gate.touch()
    resumed = _jianmu("resume", "R", "--store", db, "--approve", "all", env=env, cwd=tmp_path,
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    out, err = resumed.communicate(timeout=90)
    assert resumed.returncode == 0, out + err
    # Turns 1 and 2 came from the journal: only turns 3 and 4 were asked for.
    assert len(requests) == 4
    return out


@pytest.mark.parametrize("vendor", ["anthropic", "deepseek"])
def test_a_reasoning_agent_killed_mid_loop_resumes_with_its_reasoning_intact(
    llm_server, tmp_path, vendor
):
    tree, script, _ = _script(vendor)
    llm_server.script(*script)
    requests = llm_server.requests
    _kill_and_resume(tmp_path, tree, llm_server.url, requests)
    before = [r.body for r in requests[:2]]
    third = llm_server.requests[2].body
    # What the resumed process sent back equals what the first process received: the turns of
    # the replies it got (and, for turn 1, what it sent back itself before the kill).
    assert _assistant_turns(third, vendor)[:1] == _assistant_turns(before[1], vendor)
    received = [script[0], script[1]]
    if vendor == "anthropic":
        assert _assistant_turns(third, vendor) == [r.json["content"] for r in received]
    else:
        reasoning = [turn[0] for turn in _assistant_turns(third, vendor)]
        assert reasoning == ["Let me get the current date."] * 2


def test_a_gemini_3_agent_killed_mid_loop_sends_its_thought_signatures_back(tmp_path):
    from gemini_replay_server import GeminiReplayServer, GeminiReply

    rec = recording("gemini/gemini3_tool_call")
    call, answer = rec.interactions[0].response, rec.interactions[1].response
    server = GeminiReplayServer()
    server.start()
    try:
        server.api_key = "test-key"
        server.require_signatures = True  # Gemini 3: a function call turn without one is a 400
        turns = [GeminiReply(json=call.json) for _ in range(TURNS)]
        server.script(*turns, GeminiReply(json=answer.json))
        out = _kill_and_resume(tmp_path, GEMINI, server.url, server.requests)
        third = server.requests[2].body
    finally:
        server.stop()
    signature = call.json["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    model_turns = [c for c in third["contents"] if c["role"] == "model"]
    assert len(model_turns) == 2
    assert [turn["parts"][0]["thoughtSignature"] for turn in model_turns] == [signature] * 2
    assert '"answer": 13' in out or "answer" in out

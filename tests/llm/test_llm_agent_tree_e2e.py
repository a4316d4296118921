"""A YAML tree end to end against a local OpenAI-compatible server: an explicit tool step, then an
agent whose LLM asks for two tools at once; the guard denies one, the other runs, the LLM answers,
the answer lands in the state key the YAML names, and the trace shows every step."""

from __future__ import annotations

import json

from llm_fake_server import Reply
from llm_replies import openai_completion
from py_trees.common import Status

from jianmu_bt.loader import load_tree
from jianmu_bt.runtime import TraceWriter, read_trace

TREE = """
version: 1
name: audit_and_answer
state:
  expression: {type: string, default: "6 * 7"}
  product: {type: string}
  verdict: {type: string}
tools: [calculator, write_file]
tool_options: {workspace: "WORKSPACE"}
llm:
  provider: openai_compatible
  base_url: "BASE_URL/v1"
  model: fake-model
  timeout: 10
guard: {deny: [write_file]}
root:
  sequence:
    name: Main
    children:
      - tool:
          name: Multiply
          tool: calculator
          arguments: {expression: "{expression}"}
          output: product
      - agent:
          name: Checker
          goal: "Check that {expression} is {product} and save a note."
          tools: [calculator, write_file]
          system_prompt: "You check arithmetic."
          max_iterations: 4
          output: verdict
"""


def test_yaml_agent_tree_against_a_local_openai_compatible_server(llm_server, tmp_path):
    llm_server.script(
        Reply(
            json=openai_completion(
                None,
                [
                    ("calculator", {"expression": "6 * 7"}, "call_calc"),
                    ("write_file", {"path": "note.txt", "content": "42"}, "call_write"),
                ],
            )
        ),
        Reply(json=openai_completion("Verified: 6 * 7 = 42. I was not allowed to save a note.")),
    )
    text = TREE.replace("BASE_URL", llm_server.url).replace("WORKSPACE", str(tmp_path))
    trace_path = tmp_path / "trace.jsonl"
    with load_tree(text) as tree, TraceWriter(trace_path) as trace:
        tree.events.subscribe(trace)
        result = tree.run(timeout=30)

    assert result.status == Status.SUCCESS, result.reason
    assert result.state["product"] == "42"
    assert result.state["verdict"] == "Verified: 6 * 7 = 42. I was not allowed to save a note."
    assert not (tmp_path / "note.txt").exists()

    # The second request carried both observations, each answering its call by id.
    second = llm_server.requests[1].body
    tool_messages = {
        m["tool_call_id"]: m["content"] for m in second["messages"] if m["role"] == "tool"
    }
    assert tool_messages["call_calc"] == "42"
    assert "refused by policy deny_list" in tool_messages["call_write"]
    assert second["messages"][0] == {"role": "system", "content": "You check arithmetic."}
    assert [t["function"]["name"] for t in second["tools"]] == ["calculator", "write_file"]

    events = read_trace(trace_path)
    kinds = [(e["type"], e.get("tool")) for e in events]
    assert ("tool.call.completed", "calculator") in kinds[:10]  # the explicit step came first
    assert ("guard.decision", "write_file") in kinds
    assert kinds.count(("tool.call.completed", "calculator")) == 2
    assert [e["type"] for e in events].count("llm.response") == 2
    assert events[-1]["type"] == "tree.finished" and events[-1]["status"] == "SUCCESS"
    json.dumps(events)  # the trace is plain JSON


def test_shipped_openai_agent_tree_runs_against_a_server_named_by_the_environment(
    llm_server, monkeypatch
):
    from pathlib import Path

    tree_file = Path(__file__).resolve().parents[2] / "trees" / "agent_openai.yaml"
    monkeypatch.setenv("JIANMU_LLM_BASE_URL", f"{llm_server.url}/v1")
    monkeypatch.setenv("JIANMU_LLM_MODEL", "local-model")
    llm_server.script(
        Reply(
            json=openai_completion(None, [("calculator", {"expression": "1234 * 5678 - 99"}, "c1")])
        ),
        Reply(json=openai_completion("7006553")),
    )
    with load_tree(tree_file) as tree:
        result = tree.run(timeout=30)
    assert result.status == Status.SUCCESS, result.reason
    assert result.state["warmup"] == "1024" and result.state["answer"] == "7006553"
    assert llm_server.requests[0].body["model"] == "local-model"
    assert llm_server.requests[1].body["messages"][-1]["content"] == "7006553"

"""A tree's own LLM provider (from `llm:` in the file) keeps one connection for a run's turns."""

from __future__ import annotations

from llm_fake_server import Reply
from llm_replies import openai_completion

from jianmu_bt.loader import load_tree

TREE = """
version: 1
tools: [calculator]
llm: {provider: openai, model: fake-model, base_url: "URL/v1", timeout: 10}
root:
  agent: {goal: "Add twice", tools: [calculator]}
"""


def test_a_yaml_agent_reuses_one_connection_for_its_turns(llm_server):
    call = ("calculator", {"expression": "1 + 1"}, "c1")
    llm_server.script(
        Reply(json=openai_completion(None, [call])),
        Reply(json=openai_completion(None, [("calculator", {"expression": "2 + 2"}, "c2")])),
        Reply(json=openai_completion("4")),
    )
    tree = load_tree(TREE.replace("URL", llm_server.url))
    result = tree.run(timeout=20)
    assert result.ok, result.reason
    ports = {request.client_port for request in llm_server.requests}
    assert len(llm_server.requests) == 3 and len(ports) == 1
    second = tree.run(timeout=20)  # the next run opens its own pool (a new event loop)
    assert not second.ok  # no replies left: the server said so, over a connection of its own
    assert len({r.client_port for r in llm_server.requests}) == 2

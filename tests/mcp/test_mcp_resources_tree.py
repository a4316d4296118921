"""server-everything's resources demo through a YAML tree: an agent (scripted LLM) lists the
server's resources and reads one with the resource tools (`resources: true`), then the tree
writes the resource it picked to state.

The server is the reference `@modelcontextprotocol/server-everything` as a real process; the
flood test uses our misbehaving fixture server (`mcp_paging_server.py`). Runs are synchronous
(`tree.run`), so this module has no module-scoped async fixture.
"""

from __future__ import annotations

import json

from mcp_test_support import HERE, PYTHON, everything_command

from jianmu_bt.loader import load_tree
from jianmu_bt.runtime.events import Event

HANG_GUARD = 60
PICKED = "demo://resource/dynamic/text/2"
TEMPLATE = "demo://resource/dynamic/text/{resourceId}"


def demo_tree(command: str) -> str:
    return f"""
state:
  picked: {{type: string}}
  document: {{type: string}}
tools:
  - mcp: {{command: {command}, args: [stdio], name: everything, prefix: ev, resources: true,
          timeout: 20}}
llm:
  provider: scripted
  replies:
    - tool_calls: [{{name: ev_list_resources, arguments: {{}}}}]
    - tool_calls: [{{name: ev_read_resource, arguments: {{uri: "{TEMPLATE}"}}}}]
    - tool_calls: [{{name: ev_read_resource, arguments: {{uri: "{PICKED}"}}}}]
    - "{PICKED}"
root:
  sequence:
    children:
      - agent:
          name: Reader
          goal: Pick a text resource of the server and say its URI.
          tools: [ev_list_resources, ev_read_resource]
          output: picked
          max_iterations: 5
      - tool:
          name: Fetch
          tool: ev_read_resource
          arguments: {{uri: "{{picked}}"}}
          output: document
"""


def test_an_agent_lists_and_reads_server_everythings_resources() -> None:
    calls: list[Event] = []
    with load_tree(demo_tree(everything_command())) as tree:
        tree.events.subscribe(
            lambda e: calls.append(e) if e.type.startswith("tool.call.") else None
        )
        result = tree.run(timeout=HANG_GUARD)
        state = tree.state.get()
    assert result.ok, result.reason
    assert state["picked"] == PICKED
    assert state["document"].startswith("Resource 2: This is a plaintext resource")

    answers = [m for m in state["messages"] if m["role"] == "tool"]
    listing, unfilled, read = (m["content"] for m in answers)
    entries = [json.loads(line) for line in listing.splitlines()]
    assert any(e.get("uri_template") == TEMPLATE for e in entries)
    assert any(e.get("uri") == "demo://resource/static/document/features.md" for e in entries)
    # A template URI sent as it is: an error the model can act on, and the agent goes on.
    assert "is a URI template: replace {resourceId}" in unfilled
    assert read.startswith("Resource 2:")

    finished = [(e.type, e.data.get("tool")) for e in calls if e.type != "tool.call.started"]
    assert finished == [
        ("tool.call.completed", "ev_list_resources"),
        ("tool.call.failed", "ev_read_resource"),
        ("tool.call.completed", "ev_read_resource"),
        ("tool.call.completed", "ev_read_resource"),
    ]


ODD = str(HERE / "mcp_paging_server.py")


def test_a_tree_keeps_running_through_a_flood_of_updates() -> None:
    """A server that floods update notices while a step waits for one: the step ends once,
    unsubscribes, and the tree goes on to its next step (the folding itself is checked in
    test_mcp_client_subscriptions.py)."""
    source = f"""
state:
  text: {{type: string}}
  after: {{type: string}}
tools:
  - mcp: {{command: {PYTHON}, args: [{ODD}], name: odd, timeout: 20}}
root:
  sequence:
    children:
      - parallel:
          children:
            - mcp_resource: {{server: odd, uri: "odd://a", until: updated, wait: 30,
                             output: text}}
            - tool: {{tool: flood, arguments: {{uri: "odd://a", n: 500}}}}
      - mcp_resource: {{server: odd, uri: "odd://b", output: after}}
"""
    events: list[str] = []
    with load_tree(source) as tree:
        tree.events.subscribe(
            lambda e: events.append(e.type) if e.type.startswith("mcp.resource.") else None
        )
        result = tree.run(timeout=HANG_GUARD)
        state = tree.state.get()
    assert result.ok, result.reason
    assert (state["text"], state["after"]) == ("text of odd://a", "text of odd://b")
    assert events == [
        "mcp.resource.subscribed",
        "mcp.resource.updated",
        "mcp.resource.unsubscribed",
        "mcp.resource.read",
        "mcp.resource.read",
    ]

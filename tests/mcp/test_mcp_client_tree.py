"""MCP servers in YAML trees: progress as run events, parallel start with exact timeouts,
tool-list changes taken up between ticks, roots from the tree's workspace.

Servers are real processes: `mcp_client_features_server.py` (the official SDK's MCPServer) and
small scripts written here. Runs are synchronous (`tree.run`), so this module has no
module-scoped async fixture (its event loop would be running in the test's thread).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest
from mcp_test_support import HERE, PYTHON, SERVER_ENV, serve_args

from jianmu_bt import tool
from jianmu_bt.loader import load_tree
from jianmu_bt.runtime.events import TraceWriter, read_trace
from jianmu_bt.tools import report_progress

FEATURES = str(HERE / "mcp_client_features_server.py")
HANG_GUARD = 60


TREE = f"""
state: {{done: string}}
tools:
  - mcp: {{command: {PYTHON}, args: [{FEATURES}], name: features, timeout: 20}}
root:
  sequence:
    children:
      - tool: {{name: Counter, tool: count, arguments: {{steps: 3, pause: 0}}, output: done}}
"""


def test_a_tree_turns_progress_into_run_events_in_its_trace(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    with load_tree(TREE) as tree, TraceWriter(trace) as writer:
        tree.events.subscribe(writer)
        result = tree.run(timeout=HANG_GUARD)
    assert result.ok, result.reason
    events = read_trace(trace)
    started = next(e for e in events if e["type"] == "tool.call.started")
    progress = [e for e in events if e["type"] == "tool.progress"]
    assert [(e["progress"], e["total"], e["message"]) for e in progress] == [
        (1.0, 3.0, "step 1"),
        (2.0, 3.0, "step 2"),
        (3.0, 3.0, "step 3"),
    ]
    assert {(e["node"], e["tool"], e["call_id"]) for e in progress} == {
        ("Counter", "count", started["call_id"])
    }
    types = [e["type"] for e in events]
    assert types.index("tool.call.started") < types.index("tool.progress")
    assert types.index("tool.progress") < types.index("tool.call.completed")


@tool
def crunch(rounds: int) -> str:
    """A sync tool (it runs in a worker thread) that reports its progress."""
    for done in range(1, rounds + 1):
        report_progress(done, rounds, threading.current_thread().name)
    return "crunched"


CRUNCH_TREE = """
state: {out: string}
tools: ["test_mcp_client_tree:crunch"]
llm:
  provider: scripted
  replies:
    - tool_calls:
        - {name: crunch, arguments: {rounds: 2}}
        - {name: crunch, arguments: {rounds: 1}}
    - "done"
root:
  sequence:
    children:
      - tool: {name: Step, tool: crunch, arguments: {rounds: 3}, output: out}
      - agent: {name: Agent, goal: "crunch", max_iterations: 3}
"""


def test_a_sync_tool_reporting_from_a_worker_thread_is_delivered_on_the_loop() -> None:
    delivered: list[tuple[str | None, float, str | None, bool]] = []
    loop_thread: list[int] = []

    def listen(event: object) -> None:
        if event.type == "tree.tick":  # ticks run in the loop's thread
            loop_thread.append(threading.get_ident())
        if event.type == "tool.progress":
            data = event.data
            on_loop = threading.get_ident() in loop_thread
            delivered.append((event.node, data["progress"], data["message"], on_loop))

    with load_tree(CRUNCH_TREE, base_dir=str(HERE)) as tree:
        tree.events.subscribe(listen)
        result = tree.run(timeout=HANG_GUARD)
    assert result.ok, result.reason
    assert [(node, done) for node, done, _, _ in delivered[:3]] == [
        ("Step", 1),
        ("Step", 2),
        ("Step", 3),
    ]
    batch = sorted((node, done) for node, done, _, _ in delivered[3:])
    assert batch == [("Agent.tools", 1), ("Agent.tools", 1), ("Agent.tools", 2)]
    reported_from = {message for _, _, message, _ in delivered}
    assert threading.main_thread().name not in reported_from  # really from worker threads
    assert all(on_loop for *_, on_loop in delivered)


GROWING_TREE = f"""
state: {{answer: string}}
tools:
  - mcp: {{command: {PYTHON}, args: [{FEATURES}], name: features, timeout: 20}}
llm:
  provider: scripted
  replies:
    - tool_calls: [{{name: grow, arguments: {{name: twice}}}}]
    - tool_calls: [{{name: twice, arguments: {{x: 21}}}}]
    - "done"
root:
  sequence:
    children:
      - agent: {{name: Agent, goal: "add a tool, then use it", max_iterations: 4, output: answer}}
"""


def test_an_agent_uses_a_tool_its_server_added_during_the_run() -> None:
    completed: list[tuple[str, object]] = []

    def listen(event: object) -> None:
        if event.type in ("tool.call.completed", "tool.call.failed"):
            completed.append(
                (event.data["tool"], event.data.get("output", event.data.get("error")))
            )

    with load_tree(GROWING_TREE) as tree:
        assert "twice" not in tree.toolset.names()
        tree.events.subscribe(listen)
        result = tree.run(timeout=HANG_GUARD)
    assert result.ok, result.reason
    assert completed == [("grow", "added twice"), ("twice", 42)]


ROOTS_TREE = f"""
state: {{roots: string}}
tool_options: {{workspace: work}}
tools:
  - mcp: {{command: {PYTHON}, args: [{FEATURES}], name: features, timeout: 20}}
root:
  sequence:
    children:
      - tool: {{tool: roots, output: roots}}
"""


def test_a_trees_workspace_is_offered_to_its_servers_as_their_root(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    path = tmp_path / "tree.yaml"
    path.write_text(ROOTS_TREE)
    with load_tree(path) as tree:
        result = tree.run(timeout=HANG_GUARD)
    assert result.ok, result.reason
    assert result.state["roots"] == (tmp_path / "work").resolve().as_uri()


def test_a_halted_step_cancels_its_call_on_the_server(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    text = f"""
state: {{seen: string}}
tools:
  - mcp: {{command: {PYTHON}, args: [{FEATURES}], name: features, timeout: 50}}
root:
  sequence:
    children:
      - failure_is_success:
          child:
            timeout:
              duration: 2
              child: {{tool: {{tool: linger, arguments: {{path: "{marker}"}}}}}}
      - tool: {{tool: wait_for, arguments: {{path: "{marker}", seconds: 20}}, output: seen}}
"""
    with load_tree(text) as tree:
        result = tree.run(timeout=HANG_GUARD)  # the Timeout decorator halts the call after 2 s
    assert result.ok, result.reason
    # Seen by the server while the connection was still open: the notice, not the close.
    assert result.state["seen"] == "found"
    assert marker.read_text() == "cancelled"


def test_a_workspace_not_made_yet_is_not_offered_but_the_tree_loads(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tree.yaml"
    path.write_text(ROOTS_TREE)  # its workspace `work` does not exist
    with caplog.at_level(logging.WARNING), load_tree(path) as tree:
        (provider,) = tree.providers.catalog.providers
        assert provider.client.config.roots is None
    assert "is not a directory; no roots offered" in caplog.text


def test_a_root_given_in_the_file_must_be_a_directory(tmp_path: Path) -> None:
    path = tmp_path / "tree.yaml"
    path.write_text(ROOTS_TREE.replace("name: features,", "name: features, roots: [absent],"))
    with pytest.raises(Exception, match="is not a directory"):
        load_tree(path)


def test_a_typed_mcp_result_written_to_a_string_field_still_works() -> None:
    # `square` (-> int) is served with an outputSchema, so its result comes back typed: 9, not
    # "9". Written to a `string` state field, it must still fit it.
    args = ", ".join(serve_args(tools="mcp_server_sample_tools:ALL"))
    env = ", ".join(f"{key}: '{value}'" for key, value in SERVER_ENV.items())
    text = f"""
state: {{squared: string, raw: integer}}
tools:
  - mcp: {{command: {PYTHON}, args: [{args}], env: {{{env}}}, name: sample, timeout: 20}}
root:
  sequence:
    children:
      - tool: {{tool: square, arguments: {{x: 3}}, output: squared}}
      - tool: {{tool: square, arguments: {{x: 4}}, output: raw}}
"""
    with load_tree(text) as tree:
        result = tree.run(timeout=HANG_GUARD)
    assert result.ok, result.reason
    assert result.state["squared"] == "9"
    assert result.state["raw"] == 16

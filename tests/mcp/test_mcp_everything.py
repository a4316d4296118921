"""The reference server-everything through trees: its progress demo (`trigger-long-running-
operation` reports each step with `notifications/progress`: `tool.progress` run events in the
trace, shown by `jianmu run --watch`), its roots tool (answered from the tree's workspace), a typed
result (`outputSchema` + `structuredContent`) and an image result.

The reference server is a real `npx`-installed process (`everything_command()`: skipped when it is
not installed, failed under CI, which installs it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mcp_test_support import ROOT, everything_command

from jianmu_bt.loader import load_tree
from jianmu_bt.runtime.events import TraceWriter, read_trace

HANG_GUARD = 60


def tree_text() -> str:
    """A tree whose one step runs the server's long operation in four steps."""
    return f"""
state: {{report: string}}
tools:
  - mcp: {{command: {everything_command()}, args: [stdio], prefix: ev, timeout: 30}}
root:
  tool:
    name: Long operation
    tool: ev_trigger-long-running-operation
    arguments: {{duration: 0.8, steps: 4}}
    output: report
"""


def test_a_trees_trace_has_the_servers_progress_between_start_and_end(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    with load_tree(tree_text()) as tree, TraceWriter(trace) as writer:
        tree.events.subscribe(writer)
        result = tree.run(timeout=HANG_GUARD)
    assert result.ok, result.reason
    assert "Steps: 4" in result.state["report"]
    events = read_trace(trace)
    progress = [e for e in events if e["type"] == "tool.progress"]
    assert [(e["progress"], e["total"]) for e in progress] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert {(e["node"], e["tool"]) for e in progress} == {
        ("Long operation", "ev_trigger-long-running-operation")
    }
    types = [e["type"] for e in events]
    assert types.index("tool.call.started") < types.index("tool.progress")
    assert types.index("tool.progress") < types.index("tool.call.completed")


def test_jianmu_run_watch_shows_the_servers_progress(tmp_path: Path) -> None:
    tree_file = tmp_path / "long.yaml"
    tree_file.write_text(tree_text())
    done = subprocess.run(
        [sys.executable, "-m", "jianmu_bt.cli", "run", str(tree_file), "--watch"],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    shown = done.stdout + done.stderr
    assert "Long operation: ev_trigger-long-running-operation 4/4 (100%)" in shown


def test_roots_typed_results_and_images_of_the_reference_server_in_a_tree(tmp_path: Path) -> None:
    workspace = tmp_path / "work space"
    workspace.mkdir()
    text = f"""
state: {{roots: string, image: string, weather: dict}}
tool_options: {{workspace: "{workspace}"}}
tools:
  - mcp: {{command: {everything_command()}, args: [stdio], prefix: ev, timeout: 30}}
root:
  sequence:
    children:
      - tool: {{name: Roots, tool: ev_get-roots-list, output: roots}}
      - tool: {{name: Image, tool: ev_get-tiny-image, output: image}}
      - tool:
          name: Weather
          tool: ev_get-structured-content
          arguments: {{location: New York}}
          output: weather
"""
    with load_tree(text) as tree:
        result = tree.run(timeout=HANG_GUARD)
    assert result.ok, result.reason
    # The server asked for roots (it registers its roots tool because the tree offers them).
    assert workspace.as_uri() in result.state["roots"]
    # An image becomes a text stand-in in state (its bytes stay out of it).
    assert "[image: image/png" in result.state["image"]
    # A typed result is the tool's value: the structured content, checked by its schema.
    assert set(result.state["weather"]) == {"temperature", "conditions", "humidity"}

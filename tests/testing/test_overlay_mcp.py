"""Tools of an MCP server (a real one: `mcp-server-time` from PyPI) are known only once it
starts: the overlay substitutes them then, and a misspelt name fails the start clearly."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from jianmu_bt.testing import Overlay, Recorded, Stub, open_tree, run_tree

pytestmark = pytest.mark.skipif(
    shutil.which("mcp-server-time") is None,
    reason="mcp-server-time is not installed (pip install mcp-server-time)",
)

TREE = """\
version: 1
state: {now: {type: any}, answer: {type: string}}
tools:
  - {mcp: {command: mcp-server-time, args: [--local-timezone, UTC], prefix: time}}
root:
  sequence:
    children:
      - tool: {name: Now, tool: time_get_current_time, arguments: {timezone: UTC}, output: now}
      - agent: {name: Clock, goal: "What time is it?", output: answer}
"""
ASK = {"tool_calls": [{"name": "time_get_current_time", "arguments": {"timezone": "UTC"}}]}


def test_server_tools_are_substituted_when_the_server_starts(tmp_path: Path):
    path = tmp_path / "clock.yaml"
    path.write_text(TREE, encoding="utf-8")
    fixed = {"timezone": "UTC", "datetime": "2026-01-01T00:00:00+00:00"}
    tree = open_tree(path, Overlay(tools={"time_get_current_time": Stub(fixed)}, llm=[ASK, "0h"]))
    try:
        run = run_tree(tree)
        # The model was offered the server's own schema for the substituted tool.
        offered = tree.runner.context.llm.calls[0].tools
    finally:
        tree.close()
    assert run.succeeded, run.reason
    assert run.state["now"] == fixed
    assert [(c.node, c.output) for c in run.calls()] == [("Now", fixed), ("Clock.tools", fixed)]
    schema = next(t for t in offered if t["name"] == "time_get_current_time")
    assert "timezone" in schema["parameters"]["properties"]

    misspelt = Overlay(tools={"time_get_curent_time": Stub(1)}, llm=["x"])
    tree = open_tree(path, misspelt)
    try:
        run = run_tree(tree)
    finally:
        tree.close()
    assert not run.succeeded
    assert run.reason == (
        "<overlay>:1:1: the tree has no tool 'time_get_curent_time' (did you mean "
        "'time_get_current_time'?); its tools: time_convert_time, time_get_current_time"
    )


def test_applying_again_rebinds_once_with_the_new_applications_substitutes(tmp_path: Path):
    path = tmp_path / "clock.yaml"
    path.write_text(TREE, encoding="utf-8")
    fixed = {"timezone": "UTC", "datetime": "2026-01-01T00:00:00+00:00"}
    overlay = Overlay(
        tools={"time_get_current_time": Recorded([{"result": fixed}, {"result": fixed}])},
        llm=[ASK, "0h"],
    )
    tree = open_tree(path, overlay)
    try:
        overlay.apply(tree)  # again: the providers' start substitutes from this application
        run = run_tree(tree)
    finally:
        tree.close()
    assert run.succeeded, run.reason
    assert overlay.applied(tree).divergences == [] and overlay.unused(tree) == []
    assert [c.output for c in run.calls()] == [fixed, fixed]

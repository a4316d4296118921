"""The MCP Inspector's CLI (`@modelcontextprotocol/inspector --cli`, from npm) against our server:
tools (outputSchema, structuredContent), resources and prompts of a served tree, over stdio and
streamable HTTP.

The Inspector is found at $JIANMU_MCP_INSPECTOR, on PATH as `mcp-inspector`, or where .ci/run
installs it (~/.cache/jianmu-ci/mcp-inspector). Without it the tests skip, unless
JIANMU_REQUIRE_INSPECTOR=1 (CI sets it), which makes them fail instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_test_support import PYTHON, ROOT, SERVER_ENV, HTTPServer, serve_args

CI_INSTALL = Path.home() / ".cache/jianmu-ci/mcp-inspector/node_modules/.bin/mcp-inspector"
TOOLS = "mcp_server_sample_tools:ALL"
TREE = """
version: 1
name: inspected
state:
  topic: {type: string, default: birds, description: What to write about.}
llm: {provider: scripted, replies: [done]}
tools: [calculator]
root:
  agent: {name: Writer, goal: "Write about {topic}.", system_prompt: "Be brief.", tools: []}
"""


def inspector() -> str:
    found = os.environ.get("JIANMU_MCP_INSPECTOR") or shutil.which("mcp-inspector")
    if not found and CI_INSTALL.is_file():
        found = str(CI_INSTALL)
    if not found:
        message = "the MCP Inspector CLI (npm @modelcontextprotocol/inspector) is not installed"
        if os.environ.get("JIANMU_REQUIRE_INSPECTOR") == "1":
            pytest.fail(f"{message}, but it is required (JIANMU_REQUIRE_INSPECTOR=1)")
        pytest.skip(message)
    return found


def inspect(*args: str) -> Any:
    """Run the Inspector CLI once; its JSON answer."""
    done = subprocess.run(
        [inspector(), "--cli", *args],
        env={**os.environ, **SERVER_ENV},
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return json.loads(done.stdout)


def stdio(*method: str) -> Any:
    return inspect(PYTHON, *serve_args(tools=TOOLS), *method)


@pytest.fixture(scope="module")
def http_server() -> Iterator[HTTPServer]:
    server = HTTPServer(tools=TOOLS, auth=False)  # this Inspector CLI cannot send a header
    yield server
    server.stop()


def test_the_inspector_lists_our_tools_with_output_schemas() -> None:
    listed = {t["name"]: t for t in stdio("--method", "tools/list")["tools"]}
    assert listed["square"]["outputSchema"]["properties"]["result"] == {"type": "integer"}
    assert listed["mirror"]["outputSchema"]["required"] == ["x", "y"]
    assert "outputSchema" not in listed["untyped"]
    assert listed["square"]["annotations"]["readOnlyHint"] is True


def test_the_inspector_calls_a_tool_over_stdio() -> None:
    result = stdio("--method", "tools/call", "--tool-name", "square", "--tool-arg", "x=7")
    assert result["structuredContent"] == {"result": 49} and result["isError"] is False


def test_the_inspector_sees_an_image_block() -> None:
    result = stdio("--method", "tools/call", "--tool-name", "picture", "--tool-arg", "caption=hi")
    assert [block["type"] for block in result["content"]] == ["image", "text"]
    assert result["content"][0]["mimeType"] == "image/png"


def test_the_inspector_calls_a_tool_over_http(http_server: HTTPServer) -> None:
    result = inspect(
        http_server.url,
        "--transport",
        "http",
        "--method",
        "tools/call",
        "--tool-name",
        "mirror",
        "--tool-arg",
        "x=1",
        "y=2",
    )
    assert result["structuredContent"] == {"x": 2, "y": 1}


def test_the_inspector_reads_a_served_trees_resources_and_prompts(tmp_path: Path) -> None:
    # One Inspector run per method, each starting the server: reading and getting (listing is
    # checked with the SDK client in test_mcp_server_tree.py).
    tree = tmp_path / "inspected.yaml"
    tree.write_text(TREE)
    served = [PYTHON, "-m", "jianmu_bt.cli", "mcp", "serve", "--tree", str(tree)]
    read = inspect(*served, "--method", "resources/read", "--uri", "jianmu://tree/inspected.yaml")
    got = inspect(
        *served, "--method", "prompts/get", "--prompt-name", "Writer", "--prompt-args", "topic=owls"
    )
    assert read["contents"][0]["text"] == TREE
    assert [m["content"]["text"] for m in got["messages"]] == ["Be brief.", "Write about owls."]

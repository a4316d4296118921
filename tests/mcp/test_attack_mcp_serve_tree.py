"""Attack class 8 (real processes): `jianmu mcp serve --tree FILE` serves exactly the tree's
tools under its whole guard.

- budgets and rate limits of the tree's `guard:` count the served calls;
- a call the guard would hold for a reviewer is refused, saying an approval is needed;
- annotations follow each tool's effects (no `readOnlyHint` for http_request, write_file, bash);
- the tools of the tree's `mcp:` providers are served too, and the provider's server process is
  ended when the served tree ends (by its client closing it, or by SIGTERM).
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import anyio
import pytest
from mcp_test_support import HERE, PYTHON, ROOT, SERVER_ENV, alive

from jianmu_bt.mcp import MCPClient

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

GUARDED_TREE = """
version: 1
name: guarded
tools: ["mcp_sample_tools:fetch", "mcp_sample_tools:add", "mcp_sample_tools:save_note",
        calculator, write_file, http_request, bash]
tool_options: {workspace: "@WORKSPACE@"}
guard: {budgets: {http: 1}, rate_limits: {add: "1/60s"}, approve: [save_note]}
root:
  tool: {tool: calculator, arguments: {expression: "1 + 1"}}
"""

PROVIDER_TREE = """
version: 1
name: with_provider
tools:
  - calculator
  - mcp:
      command: "@PYTHON@"
      args: [-m, jianmu_bt.mcp, serve, --tools, "mcp_sample_tools:ALL"]
      env: {PYTHONPATH: "@PATHS@"}
      prefix: inner
      timeout: 30
  - mcp:
      command: "@PYTHON@"
      args: ["@SPAWNING@", --pids, "@PIDS@", --children, "1", --grandchild, --, --tools, echo]
      prefix: spawned
      timeout: 30
guard: {budgets: {open_world: 1}}
root:
  tool: {tool: calculator, arguments: {expression: "1 + 1"}}
"""


def serve_tree(tree: Path, **options: object) -> MCPClient:
    """A client of `jianmu mcp serve --tree TREE` started as a real process."""
    return MCPClient(
        command=PYTHON,
        args=["-m", "jianmu_bt.cli", "mcp", "serve", "--tree", str(tree)],
        env=SERVER_ENV,
        cwd=str(ROOT),
        timeout=30,
        connect_timeout=60,
        **options,  # type: ignore[arg-type]
    )


def write_tree(tmp_path: Path, text: str) -> Path:
    tree = tmp_path / "tree.yaml"
    tree.write_text(
        text.replace("@WORKSPACE@", str(tmp_path))
        .replace("@PYTHON@", PYTHON)
        .replace("@PATHS@", SERVER_ENV["PYTHONPATH"])
        .replace("@SPAWNING@", str(HERE / "mcp_spawning_server.py"))
        .replace("@PIDS@", str(tmp_path / "pids"))
    )
    return tree


async def eventually(check, seconds: float = 20.0) -> bool:
    with anyio.move_on_after(seconds):
        while not check():
            await anyio.sleep(0.05)
        return True
    return False


def served_tree_pid(tree: Path) -> int:
    """The pid of the `serve --tree TREE` process (found by its command line)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if b"--tree" in argv and str(tree).encode() in argv:
                return int(entry)
    raise LookupError(f"no process serves {tree}")


def helpers(tmp_path: Path) -> list[int]:
    """The pids of the helper processes the spawning provider started."""
    lines = (tmp_path / "pids").read_text().split()
    return [int(pid) for kind, pid in zip(lines[::2], lines[1::2], strict=True)]


def text(result) -> str:
    return result.content[0].text


async def test_the_trees_guard_counts_served_calls(tmp_path: Path) -> None:
    async with serve_tree(write_tree(tmp_path, GUARDED_TREE)) as client:
        fetched = await client.call_tool("fetch", {"url": "https://a.example"})
        over_budget = await client.call_tool("fetch", {"url": "https://b.example"})
        added = await client.call_tool("add", {"a": 2, "b": 3})
        too_fast = await client.call_tool("add", {"a": 2, "b": 3})
        held = await client.call_tool("save_note", {"text": "hi"})
    assert not fetched.is_error
    assert over_budget.is_error and "policy effect_budget" in text(over_budget)
    assert "budget of 1 'http' effects is used up" in text(over_budget)
    assert text(added) == "5"
    assert too_fast.is_error and "policy rate_limit" in text(too_fast)
    assert held.is_error and "needs a person's approval" in text(held)


async def test_served_tools_are_annotated_by_their_effects(tmp_path: Path) -> None:
    async with serve_tree(write_tree(tmp_path, GUARDED_TREE)) as client:
        listed = {t.name: t.annotations for t in await client.list_tools()}
    assert sorted(listed) == sorted(
        ["fetch", "add", "save_note", "calculator", "write_file", "http_request", "bash"]
    )
    for name in ["http_request", "write_file", "bash", "fetch", "save_note"]:
        assert listed[name].read_only_hint is False, name
    assert listed["write_file"].destructive_hint is True
    assert listed["bash"].destructive_hint is True
    assert listed["http_request"].open_world_hint is True
    assert listed["http_request"].destructive_hint is False
    assert listed["calculator"].read_only_hint is True
    assert listed["calculator"].open_world_hint is False


async def test_the_tools_of_the_trees_mcp_provider_are_served(tmp_path: Path) -> None:
    client = serve_tree(write_tree(tmp_path, PROVIDER_TREE), stop_grace=10)
    async with client:
        listed = {t.name: t.annotations for t in await client.list_tools()}
        summed = await client.call_tool("inner_add", {"a": 20, "b": 22})
        fetched = await client.call_tool("inner_fetch", {"url": "https://a.example"})
        over_budget = await client.call_tool("inner_fetch", {"url": "https://b.example"})
        inner = int(text(await client.call_tool("inner_server_pid", {})))
        spawned = helpers(tmp_path)
        assert alive(inner) and all(map(alive, spawned))
    assert "calculator" in listed and "inner_add" in listed and "inner_save_note" in listed
    # Served again with exactly what the inner server claimed.
    assert listed["inner_add"].read_only_hint is True
    assert listed["inner_save_note"].destructive_hint is True
    assert listed["spawned_echo"] is None  # its server stated nothing, so nothing is claimed
    assert text(summed) == "42"
    assert not fetched.is_error
    assert over_budget.is_error and "'open_world' effects is used up" in text(over_budget)
    assert await eventually(lambda: not alive(inner)), "the provider's server outlived the tree"
    assert not any(map(alive, spawned)), "a provider's helper processes outlived the tree"


async def test_sigterm_closes_the_trees_providers(tmp_path: Path) -> None:
    tree = write_tree(tmp_path, PROVIDER_TREE)
    client = serve_tree(tree)
    async with client:
        inner = int(text(await client.call_tool("inner_server_pid", {})))
        spawned = helpers(tmp_path)
        outer = served_tree_pid(tree)
        os.kill(outer, signal.SIGTERM)
        assert await eventually(lambda: not alive(outer)), "SIGTERM did not stop the server"
        assert not alive(inner), "the provider's server outlived the SIGTERMed tree"
        assert not any(map(alive, spawned)), "a provider's helpers outlived the SIGTERMed tree"


async def test_a_provider_that_cannot_start_is_a_clear_error(tmp_path: Path) -> None:
    tree = write_tree(tmp_path, PROVIDER_TREE.replace("@PYTHON@", "/no/such/x"))
    process = await anyio.run_process(
        [PYTHON, "-m", "jianmu_bt.cli", "mcp", "serve", "--tree", str(tree)],
        env={**os.environ, **SERVER_ENV},
        check=False,
        input=b"",
    )
    stderr = process.stderr.decode()
    assert process.returncode != 0
    assert "cannot start the tree's tools" in stderr and "command not found" in stderr
    assert "Traceback" not in stderr

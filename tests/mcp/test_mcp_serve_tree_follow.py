"""`jianmu mcp serve --tree` as a real process: the run tool under the served guard (a client
cannot loop it past the tree's rate limit), served tools that follow a provider's changed tool
list (the clients hear `tools/list_changed`), the tree-only options refused without `--tree`,
and the store closed when setting up the served tree fails after opening it."""

from __future__ import annotations

import os
import types as pytypes
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp_test_support import HERE, PYTHON, ROOT, SERVER_ENV

from jianmu_bt.cli.mcp_tree import ServedTree

pytestmark = pytest.mark.anyio

CHANGING = str(HERE / "mcp_changing_server.py")

RUN_TREE = """
version: 1
name: looped
state:
  total: {type: string}
tools: [calculator]
guard:
  rate_limits: {run_looped: "2/1h"}
root:
  tool: {name: Sum, tool: calculator, arguments: {expression: "2 + 3"}, output: total}
"""

FOLLOW_TREE = f"""
version: 1
name: follows
tools:
  - mcp: {{command: {PYTHON}, args: [{CHANGING}], name: changing, timeout: 20}}
root:
  tool: {{tool: grow, arguments: {{name: unused}}}}
"""


def serve_params(tree: Path, *extra: str) -> StdioServerParameters:
    args = ["-m", "jianmu_bt.cli", "mcp", "serve", "--tree", str(tree), *extra]
    return StdioServerParameters(command=PYTHON, args=args, env=SERVER_ENV, cwd=str(ROOT))


class Heard:
    """A message handler counting tools/list_changed notifications."""

    def __init__(self) -> None:
        self.changes = 0

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.changes += 1


async def test_the_run_tool_is_counted_by_the_served_guard(tmp_path: Path) -> None:
    tree = tmp_path / "looped.yaml"
    tree.write_text(RUN_TREE)
    outcomes = []
    async with Client(serve_params(tree, "--run-tool"), read_timeout_seconds=60) as client:
        for _ in range(3):
            outcomes.append(await client.call_tool("run_looped", {}))
    assert [o.is_error for o in outcomes] == [False, False, True]
    assert outcomes[0].structured_content["status"] == "succeeded"
    refusal = outcomes[2].content[0].text
    assert "was refused" in refusal and "rate_limit" in refusal


async def test_served_tools_follow_a_providers_changed_list(tmp_path: Path) -> None:
    tree = tmp_path / "follows.yaml"
    tree.write_text(FOLLOW_TREE)
    heard = Heard()
    async with Client(
        serve_params(tree), mode="legacy", message_handler=heard, read_timeout_seconds=60
    ) as client:
        before = {t.name for t in (await client.list_tools()).tools}
        grown = await client.call_tool("grow", {"name": "extra"})
        # The provider's new list is served once the call that changed it returned.
        after = {t.name for t in (await client.list_tools()).tools}
        answer = await client.call_tool("extra", {})
        with anyio.fail_after(20):
            while heard.changes < 1:
                await anyio.sleep(0.02)
    assert not grown.is_error, grown.content[0].text
    assert "extra" not in before and "extra" in after
    assert answer.content[0].text == "extra"


@pytest.mark.parametrize("flag", [["--run-tool"], ["--store", "runs.db"], ["--traces", "t"]])
async def test_tree_options_without_a_tree_are_refused(flag: list[str], tmp_path: Path) -> None:
    done = await anyio.run_process(
        [PYTHON, "-m", "jianmu_bt.cli", "mcp", "serve", "--tools", "calculator", *flag],
        env={**os.environ, **SERVER_ENV},
        cwd=tmp_path,
        check=False,
        input=b"",
    )
    stderr = done.stderr.decode()
    assert done.returncode != 0 and f"{flag[0]}: only with --tree FILE" in stderr
    assert "Traceback" not in stderr and not (tmp_path / "runs.db").exists()


def test_the_store_is_closed_when_the_served_tree_cannot_be_set_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import jianmu_bt.store as stores

    opened: list[Any] = []
    real_open = stores.open_store

    def recording_open(location: Any, **kwargs: Any) -> Any:
        opened.append(real_open(location, **kwargs))
        return opened[-1]

    monkeypatch.setattr(stores, "open_store", recording_open)
    args = pytypes.SimpleNamespace(store=str(tmp_path / "runs.db"), traces=None, run_tool=False)
    broken = pytypes.SimpleNamespace()  # no tools, guard or providers: fails after the store
    with pytest.raises(AttributeError):
        ServedTree(args, broken)
    assert len(opened) == 1 and opened[0]._conn is None  # closed

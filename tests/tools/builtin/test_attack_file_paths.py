"""File tools under attack, part 2: hard links out of the workspace, and leaked root paths.

A hard link is a second name of a file outside the workspace that no path check can see; each
case asserts that no secret from outside came back and nothing outside changed. Every error (and
every answer) is checked for the absolute workspace root, which must not appear.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import FILE_TOOLS, SECRET, Layout

from jianmu_bt.tools import ToolSet
from jianmu_bt.tools.builtin.files import FileInfoTool, ReadFileTool, WriteFileTool

pytestmark = pytest.mark.anyio


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


# -- class 10: hard links to files outside the workspace -------------------------------------


@pytest.fixture
def hardlinked(layout: Layout) -> Path:
    """ws/hard.txt: a second name of the secret file outside the workspace."""
    os.link(layout.secret_file, layout.root / "hard.txt")
    return layout.root / "hard.txt"


HARDLINK_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": "hard.txt"}),
    ("read_file", {"path": "hard.txt", "start_line": 1, "max_lines": 1}),
    ("write_file", {"path": "hard.txt", "content": "appended\n", "mode": "append"}),
    ("str_replace", {"path": "hard.txt", "old_str": "TOP", "new_str": "PWNED"}),
    ("str_replace", {"path": "hard.txt", "old_str": "x", "new_str": "y", "replace_all": True}),
]


@pytest.mark.parametrize(("tool", "args"), HARDLINK_CALLS, ids=lambda v: repr(v)[:40])
async def test_a_hard_link_out_of_the_workspace_is_refused(
    layout: Layout, hardlinked: Path, tool: str, args: dict[str, Any]
) -> None:
    tools = ToolSet.resolve(FILE_TOOLS, workspace=layout.root)
    before = layout.outside_snapshot()
    result = await tools.call(tool, args)
    assert (
        result.ok is False and "2 hard links" in result.error and "allow_hardlinks" in result.error
    )
    assert SECRET not in result.error
    assert layout.outside_snapshot() == before


async def test_searches_and_file_info_do_not_read_a_hard_linked_file(
    layout: Layout, hardlinked: Path
) -> None:
    tools = ToolSet.resolve(FILE_TOOLS, workspace=layout.root)
    grep = await tools.call("grep_search", {"pattern": "SECRET"})
    assert grep.ok and grep.output["matches"] == []
    assert grep.output["files_skipped"]["hard_linked"] == 1
    info = await tools.call("file_info", {"path": "hard.txt"})
    assert info.ok and info.output["hard_links"] == 2
    assert "lines" not in info.output and "binary" not in info.output


async def test_overwriting_a_hard_linked_name_never_writes_through_it(
    layout: Layout, hardlinked: Path
) -> None:
    before = layout.outside_snapshot()
    result = await WriteFileTool(workspace=layout.root).call(
        {"path": "hard.txt", "content": "replaced\n"}
    )
    assert result.ok, result.error
    assert layout.outside_snapshot() == before
    assert hardlinked.read_text() == "replaced\n" and hardlinked.stat().st_nlink == 1


async def test_allow_hardlinks_loosens_the_rule(layout: Layout, hardlinked: Path) -> None:
    tools = ToolSet.resolve(FILE_TOOLS, workspace=layout.root, allow_hardlinks=True)
    assert (await tools.call("read_file", {"path": "hard.txt"})).output == SECRET + "\n"
    grep = await tools.call("grep_search", {"pattern": "SECRET"})
    assert grep.output["matches"] == [f"hard.txt:1: {SECRET}"]
    assert (
        FileInfoTool(workspace=layout.root, allow_hardlinks=True).run({"path": "hard.txt"})["lines"]
        == 1
    )
    copy = ReadFileTool(workspace=layout.root, allow_hardlinks=True).sandbox_kwargs()
    assert copy["allow_hardlinks"] is True


# -- class 11: no message names the absolute workspace root ----------------------------------

# (tool, arguments) that fail; "{root}" is the absolute workspace root, typed by the caller.
ERROR_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": "missing.txt"}),
    ("read_file", {"path": "{root}/missing.txt"}),
    ("read_file", {"path": "{root}/sub/deep/missing.txt"}),
    ("read_file", {"path": "../outside/secret.txt"}),
    ("read_file", {"path": "{root}/../outside/secret.txt"}),
    ("read_file", {"path": "{root}/../ws_evil/x.txt"}),
    ("read_file", {"path": "link_dir/secret.txt"}),
    ("read_file", {"path": "{root}/link_dir/secret.txt"}),
    ("read_file", {"path": "{root}/link_file"}),
    ("read_file", {"path": "{root}/loop_a"}),
    ("read_file", {"path": "sub"}),
    ("read_file", {"path": "{root}/sub"}),
    ("read_file", {"path": "{root}"}),
    ("read_file", {"path": "inner.txt/x"}),
    ("read_file", {"path": "{root}/inner.txt", "start_line": 50}),
    ("read_file", {"path": "{root}/hard.txt"}),
    ("write_file", {"path": "{root}/sub", "content": "x"}),
    ("write_file", {"path": "{root}", "content": "x"}),
    ("write_file", {"path": "{root}/inner.txt", "content": "x", "mode": "create"}),
    ("write_file", {"path": "{root}/../outside/new.txt", "content": "x"}),
    ("write_file", {"path": "{root}/link_dir/new.txt", "content": "x"}),
    ("write_file", {"path": "missing_dir/x.txt", "content": "x", "create_dirs": False}),
    ("write_file", {"path": "{root}/hard.txt", "content": "x", "mode": "append"}),
    ("list_dir", {"path": "{root}/inner.txt"}),
    ("list_dir", {"path": "{root}/nope"}),
    ("list_dir", {"path": "{root}/link_dir"}),
    ("list_dir", {"path": "{root}/.."}),
    ("file_info", {"path": "{root}/nope"}),
    ("file_info", {"path": "{root}/link_file"}),
    ("str_replace", {"path": "{root}/nope", "old_str": "a", "new_str": "b"}),
    ("str_replace", {"path": "{root}/inner.txt", "old_str": "zzz", "new_str": "b"}),
    ("str_replace", {"path": "{root}/sub", "old_str": "a", "new_str": "b"}),
    ("str_replace", {"path": "{root}/hard.txt", "old_str": "TOP", "new_str": "b"}),
    ("glob_search", {"pattern": "link_dir/*"}),
    ("glob_search", {"pattern": "chain1/*/x"}),
    ("glob_search", {"pattern": "loop_a/*"}),
    ("glob_search", {"pattern": "*", "path": "{root}/inner.txt"}),
    ("glob_search", {"pattern": "*", "path": "{root}/link_dir"}),
    ("glob_search", {"pattern": "*", "path": "{root}/../outside"}),
    ("grep_search", {"pattern": "x", "path": "{root}/nope"}),
    ("grep_search", {"pattern": "x", "path": "{root}/sub/up"}),
    ("grep_search", {"pattern": "(", "path": "{root}"}),
]


def _fill(args: dict[str, Any], root: Path) -> dict[str, Any]:
    return {k: v.replace("{root}", str(root)) if isinstance(v, str) else v for k, v in args.items()}


def test_the_root_leak_corpus_covers_every_file_tool() -> None:
    assert {tool for tool, _ in ERROR_CALLS} == set(FILE_TOOLS)
    assert len(ERROR_CALLS) >= 40


@pytest.mark.parametrize(("tool", "args"), ERROR_CALLS, ids=lambda v: repr(v)[:50])
async def test_error_messages_never_name_the_absolute_root(
    layout: Layout, hardlinked: Path, tool: str, args: dict[str, Any]
) -> None:
    tools = ToolSet.resolve(FILE_TOOLS, workspace=layout.root)
    result = await tools.call(tool, _fill(args, layout.root))
    assert result.ok is False, result.output
    assert str(layout.root) not in result.error, result.error
    assert SECRET not in result.error


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_file", {"path": "locked.txt"}),
        ("write_file", {"path": "locked.txt", "content": "x", "mode": "append"}),
        ("str_replace", {"path": "locked.txt", "old_str": "a", "new_str": "b"}),
        ("list_dir", {"path": "locked_dir"}),
        ("read_file", {"path": "locked_dir/a.txt"}),
    ],
    ids=lambda v: repr(v)[:40],
)
async def test_permission_errors_name_the_path_relative_to_the_root(
    ws: Path, monkeypatch: pytest.MonkeyPatch, tool: str, args: dict[str, Any]
) -> None:
    """As root the OS ignores permission bits, so EACCES is raised by a stand-in for os.open,
    carrying the absolute path the way the kernel's error would."""
    (ws / "locked.txt").write_text("a\n")
    (ws / "locked_dir").mkdir()
    real_open = os.open

    def refusing_open(path: Any, flags: int, *rest: Any, **kw: Any) -> int:
        if str(path) in ("locked.txt", "locked_dir"):
            raise PermissionError(errno.EACCES, "Permission denied", str(ws / str(path)))
        return real_open(path, flags, *rest, **kw)

    monkeypatch.setattr(os, "open", refusing_open)
    result = await ToolSet.resolve(FILE_TOOLS, workspace=ws).call(tool, args)
    assert result.ok is False and "Permission denied" in result.error
    assert str(ws) not in result.error


async def test_successful_answers_and_notes_do_not_name_the_root_either(layout: Layout) -> None:
    (layout.root / "many").mkdir()
    for i in range(30):
        (layout.root / "many" / f"f{i}.txt").write_text("inner\n")
    tools = ToolSet.resolve(FILE_TOOLS, workspace=layout.root, max_visited=10)
    answers = [
        await tools.call("glob_search", {"pattern": "**/*.txt", "path": str(layout.root)}),
        await tools.call("grep_search", {"pattern": "inner", "path": f"{layout.root}/many"}),
        await tools.call("list_dir", {"path": str(layout.root)}),
        await tools.call("file_info", {"path": f"{layout.root}/inner.txt"}),
        await tools.call("read_file", {"path": f"{layout.root}/inner.txt"}),
        await tools.call("write_file", {"path": f"{layout.root}/new.txt", "content": "x"}),
    ]
    for answer in answers:
        assert answer.ok, answer.error
        assert str(layout.root) not in json.dumps(answer.output), answer.output

"""read_file, write_file, list_dir, file_info, str_replace on real files in a temp workspace."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import anyio
import pytest

from jianmu_bt.tools import ToolSet
from jianmu_bt.tools.builtin.edit_file import StrReplaceTool
from jianmu_bt.tools.builtin.files import (
    FileInfoTool,
    ListDirTool,
    ReadFileTool,
    WriteFileTool,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def lines(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(1, n + 1))


# -- read_file -------------------------------------------------------------------------------


async def test_read_file_returns_the_text(ws: Path) -> None:
    (ws / "a.txt").write_text("héllo\nwörld\n")
    result = await ReadFileTool(workspace=ws).call({"path": "a.txt"})
    assert result.ok and result.output == "héllo\nwörld\n"


async def test_read_file_accepts_a_bare_path_string(ws: Path) -> None:
    (ws / "a.txt").write_text("x\n")
    assert (await ReadFileTool(workspace=ws).call("a.txt")).output == "x\n"


async def test_read_file_range_of_lines_and_continuation_note(ws: Path) -> None:
    (ws / "big.txt").write_text(lines(50))
    result = await ReadFileTool(workspace=ws).call(
        {"path": "big.txt", "start_line": 11, "max_lines": 5}
    )
    text = result.output
    assert text.splitlines()[:5] == [f"line {i}" for i in range(11, 16)]
    assert "[truncated: showed lines 11-15" in text and "start_line=16" in text


async def test_read_file_stops_at_the_byte_limit_and_says_so(ws: Path) -> None:
    (ws / "big.txt").write_text(lines(10_000))
    result = await ReadFileTool(workspace=ws, max_read_bytes=1000).call({"path": "big.txt"})
    body, _, note = result.output.rpartition("\n[truncated")
    assert len(body.encode()) <= 1000
    assert "output limit of 1000 bytes" in note and "start_line=" in note


async def test_read_file_a_single_huge_line_is_cut_and_can_be_skipped(ws: Path) -> None:
    (ws / "min.js").write_text("x" * 50_000 + "\nafter\n")
    tool = ReadFileTool(workspace=ws, max_read_bytes=100)
    first = (await tool.call({"path": "min.js"})).output
    assert first.startswith("x" * 100) and "line 1 alone is longer" in first
    assert (await tool.call({"path": "min.js", "start_line": 2})).output == "after\n"


async def test_read_file_refuses_binary_files(ws: Path) -> None:
    (ws / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    result = await ReadFileTool(workspace=ws).call({"path": "img.png"})
    assert not result.ok and "binary" in result.error


@pytest.mark.parametrize(
    ("text", "start_line", "count"),
    [
        ("a\nb\nc\n", 9, "3 lines"),
        ("a\nb\nc\n", 4, "3 lines"),
        ("a\nb", 3, "2 lines"),
        ("", 2, "0 lines"),
    ],
)
async def test_read_file_start_line_past_the_end(
    ws: Path, text: str, start_line: int, count: str
) -> None:
    (ws / "a.txt").write_text(text)
    result = await ReadFileTool(workspace=ws).call({"path": "a.txt", "start_line": start_line})
    assert not result.ok and "past the end" in result.error and f"has {count}" in result.error


async def test_read_file_last_line_without_newline(ws: Path) -> None:
    (ws / "a.txt").write_text("a\nb")
    result = await ReadFileTool(workspace=ws).call({"path": "a.txt", "start_line": 2})
    assert result.output == "b"


async def test_read_file_missing_file_and_directory(ws: Path) -> None:
    (ws / "d").mkdir()
    tool = ReadFileTool(workspace=ws)
    missing = await tool.call({"path": "nope.txt"})
    directory = await tool.call({"path": "d"})
    assert "does not exist" in missing.error
    assert "is a directory" in directory.error


async def test_read_file_does_not_hang_on_a_named_pipe(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    with anyio.fail_after(10):  # a blocking open would wait for a writer forever
        result = await ReadFileTool(workspace=ws).call({"path": "pipe"})
    assert not result.ok and "not a regular file" in result.error


async def test_read_file_argument_errors_name_the_argument(ws: Path) -> None:
    tool = ReadFileTool(workspace=ws)
    assert "path: missing required argument" in (await tool.call({})).error
    assert "start_line" in (await tool.call({"path": "a", "start_line": 0})).error
    assert "unexpected argument" in (await tool.call({"path": "a", "bogus": 1})).error


def test_run_can_be_called_directly_with_a_dict(ws: Path) -> None:
    (ws / "a.txt").write_text("direct\n")
    tool = ReadFileTool(workspace=ws)
    assert tool.run({"path": "a.txt"}) == "direct\n"
    assert tool.run({"path": "../x"}).startswith("Error: path '../x' is outside the workspace")


# -- write_file ------------------------------------------------------------------------------


async def test_write_file_creates_parents_and_reports_new_file(ws: Path) -> None:
    result = await WriteFileTool(workspace=ws).call({"path": "a/b/c.txt", "content": "hi\n"})
    assert result.ok and result.output == "Wrote 3 bytes to 'a/b/c.txt' (new file)"
    assert (ws / "a/b/c.txt").read_text() == "hi\n"


async def test_write_file_without_create_dirs_refuses_missing_parents(ws: Path) -> None:
    result = await WriteFileTool(workspace=ws).call(
        {"path": "no/such.txt", "content": "x", "create_dirs": False}
    )
    assert not result.ok and "directory 'no' does not exist" in result.error


async def test_write_file_replaces_by_rename_so_other_links_keep_the_old_file(ws: Path) -> None:
    """An atomic replace swaps in a new inode; an in-place write would change both names."""
    (ws / "a.txt").write_text("old\n")
    os.link(ws / "a.txt", ws / "hardlink.txt")
    result = await WriteFileTool(workspace=ws).call({"path": "a.txt", "content": "new\n"})
    assert result.ok and "replaced the existing file" in result.output
    assert (ws / "a.txt").read_text() == "new\n"
    assert (ws / "hardlink.txt").read_text() == "old\n"
    assert sorted(p.name for p in ws.iterdir()) == ["a.txt", "hardlink.txt"]  # no temp left


async def test_write_file_keeps_the_permission_bits(ws: Path) -> None:
    (ws / "run.sh").write_text("echo 1\n")
    (ws / "run.sh").chmod(0o750)
    await WriteFileTool(workspace=ws).call({"path": "run.sh", "content": "echo 2\n"})
    assert stat.S_IMODE((ws / "run.sh").stat().st_mode) == 0o750


async def test_write_file_append_and_create_modes(ws: Path) -> None:
    tool = WriteFileTool(workspace=ws)
    await tool.call({"path": "log.txt", "content": "one\n"})
    appended = await tool.call({"path": "log.txt", "content": "two\n", "mode": "append"})
    refused = await tool.call({"path": "log.txt", "content": "three\n", "mode": "create"})
    assert appended.output == "Appended 4 bytes to 'log.txt' (now 8 bytes)"
    assert (ws / "log.txt").read_text() == "one\ntwo\n"
    assert not refused.ok and "already exists" in refused.error


async def test_write_file_over_the_size_limit_leaves_the_file_alone(ws: Path) -> None:
    (ws / "a.txt").write_text("keep\n")
    result = await WriteFileTool(workspace=ws, max_write_bytes=10).call(
        {"path": "a.txt", "content": "x" * 11}
    )
    assert not result.ok and "the limit is 10 bytes" in result.error
    assert (ws / "a.txt").read_text() == "keep\n"


async def test_write_file_over_a_directory_is_refused(ws: Path) -> None:
    (ws / "d").mkdir()
    result = await WriteFileTool(workspace=ws).call({"path": "d", "content": "x"})
    assert not result.ok and "is a directory" in result.error


async def test_write_file_to_the_workspace_root_is_refused(ws: Path) -> None:
    result = await WriteFileTool(workspace=ws).call({"path": ".", "content": "x"})
    assert not result.ok and "workspace directory itself" in result.error


# -- list_dir --------------------------------------------------------------------------------


async def test_list_dir_lists_sorted_entries_with_types_and_sizes(ws: Path) -> None:
    (ws / "b.txt").write_text("12345")
    (ws / "a").mkdir()
    (ws / ".hidden").write_text("")
    (ws / "ln").symlink_to(ws / "b.txt")
    result = await ListDirTool(workspace=ws).call({})
    assert result.output["entries"] == [
        {"name": ".hidden", "type": "file", "size": 0},
        {"name": "a", "type": "directory"},
        {"name": "b.txt", "type": "file", "size": 5},
        {"name": "ln", "type": "symlink"},
    ]
    hidden_off = await ListDirTool(workspace=ws).call({"include_hidden": False})
    assert [e["name"] for e in hidden_off.output["entries"]] == ["a", "b.txt", "ln"]


async def test_list_dir_is_bounded(ws: Path) -> None:
    for i in range(30):
        (ws / f"f{i:02}").write_text("")
    result = await ListDirTool(workspace=ws).call({"max_entries": 10})
    assert len(result.output["entries"]) == 10
    assert result.output["total"] == 30 and result.output["truncated"] is True


async def test_list_dir_of_a_file_is_an_error(ws: Path) -> None:
    (ws / "f").write_text("")
    result = await ListDirTool(workspace=ws).call({"path": "f"})
    assert not result.ok and "is not a directory" in result.error


# -- file_info -------------------------------------------------------------------------------


async def test_file_info_describes_a_text_file(ws: Path) -> None:
    (ws / "a.txt").write_text("one\ntwo\nthree")
    info = (await FileInfoTool(workspace=ws).call({"path": "a.txt"})).output
    assert info["type"] == "file" and info["size"] == 13
    assert info["binary"] is False and info["lines"] == 3
    assert info["permissions"].startswith("-rw")
    assert info["modified"].endswith("+00:00")


async def test_file_info_describes_binary_files_and_directories(ws: Path) -> None:
    (ws / "b.bin").write_bytes(b"\x00\x01\x02")
    (ws / "d").mkdir()
    tool = FileInfoTool(workspace=ws)
    binary = (await tool.call({"path": "b.bin"})).output
    directory = (await tool.call({"path": "d"})).output
    assert binary["binary"] is True and "lines" not in binary
    assert directory["type"] == "directory" and "binary" not in directory


async def test_file_info_reports_the_real_path_of_an_inside_link(ws: Path) -> None:
    (ws / "real.txt").write_text("x\n")
    (ws / "alias").symlink_to(ws / "real.txt")
    info = (await FileInfoTool(workspace=ws).call({"path": "alias"})).output
    assert info["path"] == "real.txt" and info["type"] == "file"


# -- str_replace -----------------------------------------------------------------------------


async def test_str_replace_replaces_a_unique_match(ws: Path) -> None:
    (ws / "a.py").write_text("def f():\n    return 1\n")
    result = await StrReplaceTool(workspace=ws).call(
        {"path": "a.py", "old_str": "return 1", "new_str": "return 2"}
    )
    assert result.ok and "line 2" in result.output
    assert (ws / "a.py").read_text() == "def f():\n    return 2\n"


async def test_str_replace_refuses_ambiguous_matches_and_counts_them(ws: Path) -> None:
    (ws / "a.txt").write_text("x = 1\ny = 2\nx = 1\nx = 1\n")
    result = await StrReplaceTool(workspace=ws).call(
        {"path": "a.txt", "old_str": "x = 1", "new_str": "x = 9"}
    )
    assert not result.ok
    assert "matches 3 times" in result.error and "lines 1, 3, 4" in result.error
    assert (ws / "a.txt").read_text() == "x = 1\ny = 2\nx = 1\nx = 1\n"


async def test_str_replace_replace_all(ws: Path) -> None:
    (ws / "a.txt").write_text("a a a\n")
    result = await StrReplaceTool(workspace=ws).call(
        {"path": "a.txt", "old_str": "a", "new_str": "b", "replace_all": True}
    )
    assert result.ok and "Replaced 3 occurrences" in result.output
    assert (ws / "a.txt").read_text() == "b b b\n"


async def test_str_replace_not_found_gives_a_hint_for_crlf_files(ws: Path) -> None:
    (ws / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    result = await StrReplaceTool(workspace=ws).call(
        {"path": "w.txt", "old_str": "one\ntwo", "new_str": "x"}
    )
    assert not result.ok and "0 matches" in result.error and "\\r\\n" in result.error


async def test_str_replace_keeps_bytes_it_does_not_touch(ws: Path) -> None:
    (ws / "latin.txt").write_bytes(b"caf\xe9\r\nkeep\r\n")
    await StrReplaceTool(workspace=ws).call(
        {"path": "latin.txt", "old_str": "keep", "new_str": "kept"}
    )
    assert (ws / "latin.txt").read_bytes() == b"caf\xe9\r\nkept\r\n"


async def test_str_replace_refuses_identical_and_empty_old_str(ws: Path) -> None:
    (ws / "a.txt").write_text("a\n")
    tool = StrReplaceTool(workspace=ws)
    same = await tool.call({"path": "a.txt", "old_str": "a", "new_str": "a"})
    empty = await tool.call({"path": "a.txt", "old_str": "", "new_str": "b"})
    assert "identical" in same.error
    assert "old_str" in empty.error


async def test_str_replace_refuses_binary_files(ws: Path) -> None:
    (ws / "b.bin").write_bytes(b"ab\x00cd")
    result = await StrReplaceTool(workspace=ws).call(
        {"path": "b.bin", "old_str": "ab", "new_str": "x"}
    )
    assert not result.ok and "binary" in result.error


# -- workspace default and construction ------------------------------------------------------


def test_the_default_workspace_is_the_current_directory(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ws)
    (ws / "here.txt").write_text("here\n")
    tool = ReadFileTool()
    assert tool.workspace.root == ws.resolve()
    assert tool.run({"path": "here.txt"}) == "here\n"


def test_a_missing_workspace_root_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        ReadFileTool(workspace=tmp_path / "missing")


async def test_writers_serialise_and_readers_run_in_parallel(ws: Path) -> None:
    tools = ToolSet.resolve(
        ["read_file", "write_file", "list_dir", "file_info", "str_replace"], workspace=ws
    )
    assert tools.is_parallel_safe(["read_file", "list_dir", "file_info"])
    assert not tools.is_parallel_safe(["read_file", "write_file"])
    assert not tools.is_parallel_safe(["str_replace"])

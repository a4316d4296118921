"""File tools under attack, part 1: work that the arguments could make unbounded.

read_file with a far start_line, huge files, millions of short lines or matches, huge and deep
directories, catastrophic glob and regex patterns, and edits that would grow without bound. Each
case asserts that the effect did not happen: no more bytes were read than the caps allow
(counted by the kernel, /proc/self/io), no loop ran once per line or per match (counted by a
profile hook, a count of calls and not a time), and pattern and size bombs, which run in a
subprocess with an address-space limit, end with an error. The subprocess timeout only bounds a
hung case; it is not a timing assertion.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jianmu_bt.tools.builtin.edit_file import StrReplaceTool
from jianmu_bt.tools.builtin.files import ListDirTool, ReadFileTool
from jianmu_bt.tools.builtin.search_files import GlobSearchTool, GrepSearchTool

pytestmark = pytest.mark.anyio

MIB = 1024 * 1024
MEMORY_LIMIT = 1 << 30
HUNG_AFTER = 20  # seconds; a bound for a hung subprocess, not a timing assertion
DEFAULT_SCAN = ReadFileTool().max_scan_bytes

RUNNER = """
import json, sys
spec = json.loads(sys.argv[1])
from jianmu_bt.tools import ToolSet
tool = ToolSet.resolve([spec["tool"]], workspace=spec["workspace"], **spec["options"]).get(
    spec["tool"]
)
print(json.dumps({"output": tool.run(spec["args"])}, default=str))
"""


def run_isolated(
    tool: str, workspace: Path, args: dict[str, Any], **options: Any
) -> dict[str, Any] | str:
    """One tool call in a memory-limited subprocess: its output, or why it did not finish."""
    spec = {"tool": tool, "workspace": str(workspace), "args": args, "options": options}
    try:
        done = subprocess.run(
            [sys.executable, "-c", RUNNER, json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=HUNG_AFTER,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT)),
            cwd=Path(__file__).resolve().parents[3],
        )
    except subprocess.TimeoutExpired:
        return f"still running after {HUNG_AFTER}s"
    if done.returncode != 0:
        return f"exit code {done.returncode}: {done.stderr[-800:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def calls_made(run: Callable[[], Any]) -> tuple[Any, int]:
    """`run()` and how many Python and built-in calls it made: a count of work, not of time."""
    count = 0

    def profile(_frame: Any, event: str, _arg: Any) -> None:
        nonlocal count
        count += event in ("call", "c_call")

    sys.setprofile(profile)
    try:
        result = run()
    finally:
        sys.setprofile(None)
    return result, count


def bytes_read() -> int:
    """Bytes this process has read through read(2) and friends so far (Linux)."""
    with open("/proc/self/io") as io:
        return int(next(line for line in io if line.startswith("rchar:")).split()[1])


needs_proc_io = pytest.mark.skipif(
    not os.path.exists("/proc/self/io"), reason="counts reads with /proc/self/io (Linux)"
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def sparse_text_file(path: Path, size: int) -> None:
    """A text head of 1,000 lines, then a hole up to `size` bytes (no disk blocks used)."""
    with open(path, "wb") as handle:
        handle.write(b"header line\n" * 1000)
        handle.truncate(size)


# -- class 9: read_file's work is bounded by its byte caps, whatever the arguments ------------


@needs_proc_io
@pytest.mark.timeout(60)
def test_a_far_start_line_in_a_200_mib_sparse_file_is_an_error_after_at_most_the_cap(
    ws: Path,
) -> None:
    sparse_text_file(ws / "sparse.txt", 200 * MIB)
    tool = ReadFileTool(workspace=ws)
    before = bytes_read()
    output = tool.run({"path": "sparse.txt", "start_line": 10**7})
    read = bytes_read() - before
    assert output.startswith("Error:") and "max_scan_bytes" in output
    assert "which hold 1000 lines" in output
    assert read <= DEFAULT_SCAN + 2 * MIB, f"read {read} bytes of a 200 MiB file"


@needs_proc_io
@pytest.mark.parametrize("start_line", [10**7, 10**9, 5000])
def test_a_smaller_scan_cap_bounds_the_work_further(ws: Path, start_line: int) -> None:
    sparse_text_file(ws / "sparse.txt", 200 * MIB)
    tool = ReadFileTool(workspace=ws, max_scan_bytes=MIB)
    before = bytes_read()
    output = tool.run({"path": "sparse.txt", "start_line": start_line})
    assert bytes_read() - before <= 2 * MIB + 64 * 1024
    assert output.startswith("Error:") and f"first {MIB} bytes" in output


@needs_proc_io
def test_reading_the_start_of_a_huge_file_reads_only_the_output_cap(ws: Path) -> None:
    sparse_text_file(ws / "sparse.txt", 200 * MIB)
    tool = ReadFileTool(workspace=ws, max_read_bytes=10_000)
    before = bytes_read()
    output = tool.run({"path": "sparse.txt"})
    assert bytes_read() - before <= 64 * 1024  # the 8 KiB binary sniff and the 10 KB read
    assert output.startswith("header line\n") and "[truncated" in output


@needs_proc_io
@pytest.mark.timeout(60)
def test_millions_of_short_lines_are_skipped_in_blocks(ws: Path) -> None:
    """The 53 s case: the line-by-line skip. 8 Mi one-character lines, seeks near the end."""
    (ws / "short.txt").write_bytes(b"x\n" * (8 * MIB))
    tool = ReadFileTool(workspace=ws)
    before = bytes_read()
    near_end, calls = calls_made(
        lambda: tool.run({"path": "short.txt", "start_line": 8 * MIB - 1, "max_lines": 5})
    )
    past_end = tool.run({"path": "short.txt", "start_line": 10**7})
    assert bytes_read() - before <= 2 * (16 * MIB + MIB)
    assert calls < 20_000, f"{calls} calls to skip 8 Mi lines: a loop per line is back"
    assert near_end == "x\nx\n"
    assert past_end == f"Error: start_line {10**7} is past the end of 'short.txt', which has " + (
        f"{8 * MIB} lines"
    )


def test_block_reading_keeps_the_line_and_note_semantics(ws: Path) -> None:
    text = "".join(f"line {i}\n" for i in range(1, 3001))
    (ws / "a.txt").write_text(text)
    tool = ReadFileTool(workspace=ws, max_read_bytes=5000)
    first = tool.run({"path": "a.txt", "start_line": 2001, "max_lines": 10})
    assert first.splitlines()[:10] == [f"line {i}" for i in range(2001, 2011)]
    assert "start_line=2011" in first
    cut = tool.run({"path": "a.txt", "start_line": 1})
    assert "output limit of 5000 bytes" in cut and len(cut.split("\n[truncated")[0]) <= 5000
    assert tool.run({"path": "a.txt", "start_line": 3000}) == "line 3000\n"
    assert "which has 3000 lines" in tool.run({"path": "a.txt", "start_line": 3001})


def test_grep_reports_a_line_with_millions_of_matches_once(ws: Path) -> None:
    (ws / "one_line.txt").write_text("a" * (3 * MIB) + "\nb a\n")
    tool = GrepSearchTool(workspace=ws)
    output, calls = calls_made(lambda: tool.run({"pattern": "a"}))
    assert calls < 20_000, f"{calls} calls for two matching lines: a loop per match is back"
    assert [m.split(":")[1] for m in output["matches"]] == ["1", "2"]
    assert len(output["matches"][0]) < 500  # the long line is cut for display


async def test_grep_skips_a_file_over_its_size_cap_without_reading_it(ws: Path) -> None:
    sparse_text_file(ws / "big.txt", 200 * MIB)
    result = await GrepSearchTool(workspace=ws).call({"pattern": "header"})
    assert result.output["files_skipped"]["too_large"] == 1 and result.output["matches"] == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("pattern", "name"),
    [
        ("*a*a*a*a*a*a*a*a*a*a*a*a*c", "a" * 250),
        ("*" + "a*" * 100 + "c", "a" * 250),
        ("**/**/**/**/**/**/**/**/**/**/x", "/".join(["d"] * 60) + "/y"),
        ("**/*a*a*a*a*a*a*a*a*a*c", "/".join(["a" * 40] * 8)),
    ],
    ids=["stars", "hundred-stars", "double-stars", "both"],
)
def test_glob_patterns_cannot_backtrack_for_ever(ws: Path, pattern: str, name: str) -> None:
    """Naively translated, these took 40 s (stars, 60 characters) and grew exponentially."""
    path = ws / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x\n")
    result = run_isolated("glob_search", ws, {"pattern": pattern, "include_hidden": True})
    assert isinstance(result, dict), result
    assert result["output"]["matches"] == []
    grep = run_isolated("grep_search", ws, {"pattern": "x", "include": pattern})
    assert isinstance(grep, dict), grep
    assert grep["output"]["matches"] == []


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "pattern",
    [r"(?:a{10000}){10000}", r"(?:(?:a{1000}){1000}){10}", r"((a{100}){100}){100}"],
)
def test_grep_refuses_a_pattern_that_would_take_gigabytes_to_compile(
    ws: Path, pattern: str
) -> None:
    (ws / "a.txt").write_text("aaaa\n")
    result = run_isolated("grep_search", ws, {"pattern": pattern})
    assert isinstance(result, dict), result
    assert result["output"].startswith("Error:") and "counted repeats" in result["output"]


@pytest.mark.timeout(60)
def test_str_replace_refuses_an_edit_that_would_grow_past_the_cap_before_building_it(
    ws: Path,
) -> None:
    """8 Mi matches times 1,000 characters would be 8 GB: refused from the arithmetic."""
    (ws / "a.txt").write_bytes(b"a" * (8 * MIB))
    args = {"path": "a.txt", "old_str": "a", "new_str": "b" * 1000, "replace_all": True}
    result = run_isolated("str_replace", ws, args)
    assert isinstance(result, dict), result
    assert result["output"].startswith("Error:") and "the limit is" in result["output"]
    assert (ws / "a.txt").read_bytes() == b"a" * (8 * MIB)


def test_str_replace_names_only_the_first_matches_of_millions(ws: Path) -> None:
    (ws / "a.txt").write_text("ab\n" * (2 * MIB))
    output = StrReplaceTool(workspace=ws).run({"path": "a.txt", "old_str": "b", "new_str": "c"})
    assert f"({2 * MIB} in all)" in output and "lines 1, 2, 3" in output


def test_list_dir_reads_only_so_many_entries_of_a_huge_directory(ws: Path) -> None:
    for i in range(300):
        (ws / f"f{i:03}").touch()
    result = ListDirTool(workspace=ws, max_scan_entries=100).run({"path": ".", "max_entries": 5})
    assert result["truncated"] is True and "more than 100 entries" in result["note"]
    assert result["total"] == 100 and len(result["entries"]) == 5


async def test_searches_do_not_enter_trees_deeper_than_their_limit(ws: Path) -> None:
    deep = ws.joinpath(*["d"] * 12)
    deep.mkdir(parents=True)
    (deep / "bottom.txt").write_text("needle\n")
    shallow = await GrepSearchTool(workspace=ws, max_depth=8).call({"pattern": "needle"})
    assert shallow.output["matches"] == [] and shallow.output["truncated"] is True
    assert "more than 8 levels deep" in shallow.output["skipped"][0]
    found = await GrepSearchTool(workspace=ws).call({"pattern": "needle"})
    assert found.output["matches"] == ["/".join(["d"] * 12) + "/bottom.txt:1: needle"]
    glob = await GlobSearchTool(workspace=ws, max_depth=8).call({"pattern": "**/bottom.txt"})
    assert glob.output["matches"] == [] and "skipped" in glob.output


async def test_a_huge_directory_is_read_only_up_to_the_visit_budget(ws: Path) -> None:
    for i in range(300):
        (ws / f"f{i:03}.txt").touch()
    result = await GlobSearchTool(workspace=ws, max_visited=50).call({"pattern": "*.none"})
    assert result.output["truncated"] is True
    assert "more than 51 entries" in result.output["skipped"][0]

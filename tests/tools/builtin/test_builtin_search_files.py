"""glob_search and grep_search on real trees: matching, bounds, and patterns that never finish."""

from __future__ import annotations

from pathlib import Path

import pytest

from jianmu_bt.tools.builtin.search_files import GlobSearchTool, GrepSearchTool, glob_regex

pytestmark = pytest.mark.anyio


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    files = {
        "setup.py": "import os\n",
        "README.md": "# Project\nTODO: write docs\n",
        "src/app.py": "def main():\n    # TODO: implement\n    return 42\n",
        "src/util.py": "def helper():\n    return 'todo in lower case'\n",
        "src/pkg/deep.py": "VALUE = 1\n",
        "src/notes.md": "nothing here\n",
        "tests/test_app.py": "from src.app import main\n",
        ".git/config": "TODO hidden\n",
        "data/blob.bin": "TODO\x00binary",
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "setup.py", True),
        ("*.py", "src/app.py", False),
        ("**/*.py", "src/app.py", True),
        ("**/*.py", "setup.py", True),
        ("src/**/*.py", "src/pkg/deep.py", True),
        ("src/*.py", "src/pkg/deep.py", False),
        ("test_?pp.py", "test_app.py", True),
        ("[st]*.py", "setup.py", True),
        ("[!s]*.py", "setup.py", False),
        ("src/**", "src/pkg/deep.py", True),
        ("a+b(c).txt", "a+b(c).txt", True),
    ],
)
def test_glob_pattern_semantics(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is matches


async def test_glob_finds_files_recursively_with_workspace_relative_paths(tree: Path) -> None:
    result = await GlobSearchTool(workspace=tree).call({"pattern": "**/*.py"})
    assert result.output["matches"] == [
        "setup.py",
        "src/app.py",
        "src/pkg/deep.py",
        "src/util.py",
        "tests/test_app.py",
    ]
    assert result.output["truncated"] is False


async def test_glob_top_level_only_and_within_a_path(tree: Path) -> None:
    tool = GlobSearchTool(workspace=tree)
    top = await tool.call({"pattern": "*.py"})
    in_src = await tool.call({"pattern": "*.md", "path": "src"})
    assert top.output["matches"] == ["setup.py"]
    assert in_src.output["matches"] == ["src/notes.md"]


async def test_glob_marks_directories_with_a_slash(tree: Path) -> None:
    result = await GlobSearchTool(workspace=tree).call({"pattern": "src/*"})
    assert "src/pkg/" in result.output["matches"]
    assert "src/app.py" in result.output["matches"]


async def test_glob_skips_hidden_names_unless_asked_or_named(tree: Path) -> None:
    tool = GlobSearchTool(workspace=tree)
    default = await tool.call({"pattern": "**/config"})
    asked = await tool.call({"pattern": "**/config", "include_hidden": True})
    named = await tool.call({"pattern": ".git/*"})
    assert default.output["matches"] == []
    assert asked.output["matches"] == [".git/config"]
    assert named.output["matches"] == [".git/config"]


async def test_glob_is_bounded_in_results(tree: Path) -> None:
    result = await GlobSearchTool(workspace=tree).call({"pattern": "**/*", "max_results": 3})
    assert len(result.output["matches"]) == 3
    assert result.output["truncated"] is True and "narrow the pattern" in result.output["note"]


async def test_glob_is_bounded_in_entries_visited(tmp_path: Path) -> None:
    for i in range(50):
        (tmp_path / f"f{i}.txt").write_text("")
    result = await GlobSearchTool(workspace=tmp_path, max_visited=20).call({"pattern": "**/*.none"})
    assert result.output["truncated"] is True
    assert "visiting 20 entries" in result.output["note"]


async def test_glob_does_not_enter_symlinked_directories(tree: Path) -> None:
    (tree / "loop").symlink_to(tree, target_is_directory=True)
    result = await GlobSearchTool(workspace=tree).call({"pattern": "**/deep.py"})
    assert result.output["matches"] == ["src/pkg/deep.py"]


async def test_glob_of_a_missing_directory_is_an_error(tree: Path) -> None:
    result = await GlobSearchTool(workspace=tree).call({"pattern": "*", "path": "nope"})
    assert not result.ok and "does not exist" in result.error


async def test_grep_returns_file_line_matches(tree: Path) -> None:
    result = await GrepSearchTool(workspace=tree).call({"pattern": r"TODO:"})
    assert result.output["matches"] == [
        "README.md:2: TODO: write docs",
        "src/app.py:2:     # TODO: implement",
    ]


async def test_grep_ignore_case_include_filter_and_path(tree: Path) -> None:
    tool = GrepSearchTool(workspace=tree)
    anycase = await tool.call({"pattern": "todo", "ignore_case": True, "include": "*.py"})
    in_path = await tool.call({"pattern": "=", "path": "src", "include": "pkg/*.py"})
    assert anycase.output["matches"] == [
        "src/app.py:2:     # TODO: implement",
        "src/util.py:2:     return 'todo in lower case'",
    ]
    assert in_path.output["matches"] == ["src/pkg/deep.py:1: VALUE = 1"]


async def test_grep_skips_binary_files_and_hidden_directories(tree: Path) -> None:
    result = await GrepSearchTool(workspace=tree).call({"pattern": "TODO"})
    assert all(not m.startswith((".git", "data/")) for m in result.output["matches"])
    assert result.output["files_skipped"]["binary"] == 1
    hidden = await GrepSearchTool(workspace=tree).call(
        {"pattern": "hidden", "include_hidden": True}
    )
    assert hidden.output["matches"] == [".git/config:1: TODO hidden"]


async def test_grep_skips_files_over_the_size_limit(tree: Path) -> None:
    (tree / "huge.log").write_text("TODO: " + "x" * 5000 + "\n")
    result = await GrepSearchTool(workspace=tree, max_file_bytes=1000).call({"pattern": "TODO"})
    assert result.output["files_skipped"]["too_large"] == 1
    assert not any(m.startswith("huge.log") for m in result.output["matches"])


async def test_grep_reports_each_line_once_and_trims_long_lines(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("ab ab ab " + "z" * 1000 + "\n")
    result = await GrepSearchTool(workspace=tmp_path, max_line_chars=20).call({"pattern": "ab"})
    assert result.output["matches"] == ["a.txt:1: ab ab ab zzzzzzzzzzz…"]


async def test_grep_is_bounded_in_results(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hit\n" * 50)
    result = await GrepSearchTool(workspace=tmp_path).call({"pattern": "hit", "max_results": 5})
    assert len(result.output["matches"]) == 5 and result.output["truncated"] is True


async def test_grep_invalid_regex_is_a_clear_error(tree: Path) -> None:
    result = await GrepSearchTool(workspace=tree).call({"pattern": "(unclosed"})
    assert not result.ok and "invalid regular expression" in result.error


async def test_grep_stops_a_catastrophic_pattern_at_the_time_limit(tmp_path: Path) -> None:
    (tmp_path / "evil.txt").write_text("a" * 60 + "b\n")
    tool = GrepSearchTool(workspace=tmp_path, time_limit=0.5)
    result = await tool.call({"pattern": "(a|aa)+$"})  # unstopped, it runs for years: a hang
    assert result.ok and result.output["truncated"] is True
    assert "time limit" in result.output["note"]

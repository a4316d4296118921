"""The adversarial corpus: every attempt to leave the workspace is refused, with a reason.

Each case is an LLM-style call through `ToolSet.call`. A case passes only if the call fails with
an "Error:" naming the reason, the secret never appears in the answer, and nothing outside the
workspace was created or changed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import FILE_TOOLS, SECRET, Layout

from jianmu_bt.tools import ToolSet
from jianmu_bt.tools.builtin.workspace import Workspace, WorkspaceError

OUTSIDE = "outside the workspace"
LINK = "symbolic link"
STRAY = "/tmp/jianmu-escape-test.txt"

# (tool, arguments, reason the error must give); "{root}", "{outside}", "{evil}" are filled in.
CORPUS: list[tuple[str, dict[str, Any], str]] = [
    # reading: dot-dot, absolute, prefix confusion
    ("read_file", {"path": "../outside/secret.txt"}, OUTSIDE),
    ("read_file", {"path": "../../../../../../etc/passwd"}, OUTSIDE),
    ("read_file", {"path": "sub/../../outside/secret.txt"}, OUTSIDE),
    ("read_file", {"path": "sub/deep/../../../outside/secret.txt"}, OUTSIDE),
    ("read_file", {"path": "./../outside/secret.txt"}, OUTSIDE),
    ("read_file", {"path": "sub/./../../outside/secret.txt"}, OUTSIDE),
    ("read_file", {"path": ".."}, OUTSIDE),
    ("read_file", {"path": "{outside}/secret.txt"}, OUTSIDE),
    ("read_file", {"path": "{root}/../outside/secret.txt"}, OUTSIDE),
    ("read_file", {"path": "/etc/passwd"}, OUTSIDE),
    ("read_file", {"path": "//etc/passwd"}, OUTSIDE),
    ("read_file", {"path": "/proc/self/environ"}, OUTSIDE),
    ("read_file", {"path": "/"}, OUTSIDE),
    ("read_file", {"path": "{evil}/x.txt"}, OUTSIDE),
    ("read_file", {"path": "../ws_evil/x.txt"}, OUTSIDE),
    # reading through symbolic links
    ("read_file", {"path": "link_file"}, LINK),
    ("read_file", {"path": "rel_link"}, LINK),
    ("read_file", {"path": "link_dir/secret.txt"}, LINK),
    ("read_file", {"path": "chain1/secret.txt"}, LINK),
    ("read_file", {"path": "evil_link/x.txt"}, LINK),
    ("read_file", {"path": "sub/up/secret.txt"}, LINK),
    ("read_file", {"path": "dangling_out"}, LINK),
    ("read_file", {"path": "{root}/link_dir/secret.txt"}, LINK),
    ("read_file", {"path": "loop_a"}, "loop"),
    # unusable path text
    ("read_file", {"path": "inner.txt\x00../../outside/secret.txt"}, "NUL byte"),
    ("read_file", {"path": "\x00"}, "NUL byte"),
    ("read_file", {"path": "a" * 300}, "at most 255"),
    ("read_file", {"path": "a/" * 2100}, "the limit is 4096"),
    ("read_file", {"path": "bad\ud800name"}, "not valid UTF-8"),
    ("read_file", {"path": "~/.bashrc"}, "does not exist"),  # no home expansion
    # writing: outside, through links, new files under linked directories
    ("write_file", {"path": "../outside/new.txt", "content": "x"}, OUTSIDE),
    ("write_file", {"path": "{evil}/new.txt", "content": "x"}, OUTSIDE),
    ("write_file", {"path": STRAY, "content": "x"}, OUTSIDE),
    ("write_file", {"path": "link_dir/new.txt", "content": "x"}, LINK),
    ("write_file", {"path": "link_file", "content": "overwritten"}, LINK),
    ("write_file", {"path": "dangling_out", "content": "created"}, LINK),
    ("write_file", {"path": "evil_link/new.txt", "content": "x"}, LINK),
    ("write_file", {"path": "sub/up/new.txt", "content": "x"}, LINK),
    ("write_file", {"path": "chain1/deeper/new.txt", "content": "x"}, LINK),
    ("write_file", {"path": "x\x00y", "content": "x"}, "NUL byte"),
    ("write_file", {"path": "b" * 256, "content": "x"}, "at most 255"),
    ("write_file", {"path": "link_file", "content": "x", "mode": "append"}, LINK),
    # editing
    ("str_replace", {"path": "link_file", "old_str": "TOP", "new_str": "X"}, LINK),
    ("str_replace", {"path": "../outside/secret.txt", "old_str": "TOP", "new_str": "X"}, OUTSIDE),
    # listing and describing
    ("list_dir", {"path": ".."}, OUTSIDE),
    ("list_dir", {"path": "/"}, OUTSIDE),
    ("list_dir", {"path": "link_dir"}, LINK),
    ("list_dir", {"path": "sub/up"}, LINK),
    ("file_info", {"path": "link_file"}, LINK),
    ("file_info", {"path": "../outside"}, OUTSIDE),
    # searching
    ("glob_search", {"pattern": "../outside/*"}, "'..'"),
    ("glob_search", {"pattern": "**/../../outside/*"}, "'..'"),
    ("glob_search", {"pattern": "/etc/*"}, "absolute"),
    ("glob_search", {"pattern": "*", "path": "link_dir"}, LINK),
    ("glob_search", {"pattern": "**/*", "path": ".."}, OUTSIDE),
    ("grep_search", {"pattern": "TOP", "path": ".."}, OUTSIDE),
    ("grep_search", {"pattern": "TOP", "path": "link_dir"}, LINK),
    ("grep_search", {"pattern": "TOP", "include": "../outside/*"}, "'..'"),
]


def _fill(value: Any, layout: Layout) -> Any:
    if isinstance(value, str):
        return (
            value.replace("{root}", str(layout.root))
            .replace("{outside}", str(layout.outside))
            .replace("{evil}", str(layout.evil))
        )
    return value


def test_the_corpus_has_at_least_forty_escapes() -> None:
    assert len(CORPUS) >= 40
    assert len({(tool, repr(args)) for tool, args, _ in CORPUS}) == len(CORPUS)


@pytest.mark.anyio
@pytest.mark.parametrize(("tool", "args", "reason"), CORPUS, ids=lambda v: repr(v)[:60])
async def test_escape_is_refused_with_a_reason(
    layout: Layout, tool: str, args: dict[str, Any], reason: str
) -> None:
    tools = ToolSet.resolve(FILE_TOOLS, workspace=layout.root)
    before = layout.outside_snapshot()
    result = await tools.call(tool, {k: _fill(v, layout) for k, v in args.items()})
    assert result.ok is False, result.output
    assert result.error.startswith("Error:")
    assert reason in result.error
    assert SECRET not in result.error
    assert layout.outside_snapshot() == before
    assert not os.path.exists(STRAY)
    assert not (layout.outside / "missing.txt").exists()


@pytest.mark.anyio
async def test_whole_tree_searches_never_show_what_links_lead_to(layout: Layout) -> None:
    tools = ToolSet.resolve(FILE_TOOLS, workspace=layout.root)
    grep = await tools.call("grep_search", {"pattern": "SECRET", "include_hidden": True})
    glob = await tools.call("glob_search", {"pattern": "**/*", "include_hidden": True})
    assert grep.ok and glob.ok
    assert grep.output["matches"] == []
    assert "secret.txt" not in " ".join(glob.output["matches"])
    assert "sub/deep/note.md" in glob.output["matches"]


@pytest.mark.anyio
async def test_paths_inside_the_workspace_are_not_refused(layout: Layout) -> None:
    """The control group: the same tools accept the equivalent legitimate paths."""
    tools = ToolSet.resolve(FILE_TOOLS, workspace=layout.root)
    for path in ["inner.txt", "sub/../inner.txt", f"{layout.root}/inner.txt", "inside_link"]:
        result = await tools.call("read_file", {"path": path})
        assert result.ok, result.error
        assert result.output == "inner text\n"


def test_a_directory_swapped_for_a_link_after_the_check_is_not_followed(layout: Layout) -> None:
    """The check-then-use race: the use walks from the root without following links."""
    workspace = Workspace(layout.root)
    (layout.root / "swap").mkdir()
    (layout.root / "swap" / "secret.txt").write_text("harmless\n")
    resolved = workspace.resolve("swap/secret.txt")
    (layout.root / "swap" / "secret.txt").unlink()
    (layout.root / "swap").rmdir()
    (layout.root / "swap").symlink_to(layout.outside, target_is_directory=True)
    before = layout.outside_snapshot()
    with pytest.raises(WorkspaceError, match="symbolic link"):
        workspace.open_file(resolved)
    with pytest.raises(WorkspaceError, match="symbolic link"):
        workspace.write_atomic(resolved, b"overwritten")
    assert layout.outside_snapshot() == before


def test_a_file_swapped_for_a_link_after_the_check_is_replaced_not_written_through(
    layout: Layout,
) -> None:
    workspace = Workspace(layout.root)
    resolved = workspace.resolve("target.txt")
    (layout.root / "target.txt").symlink_to(layout.secret_file)
    with pytest.raises(WorkspaceError, match="symbolic link"):
        workspace.open_file(resolved)
    workspace.write_atomic(resolved, b"new content")
    assert layout.secret_file.read_text() == SECRET + "\n"
    assert not (layout.root / "target.txt").is_symlink()
    assert (layout.root / "target.txt").read_bytes() == b"new content"


def test_containment_is_decided_on_components_not_string_prefixes(tmp_path: Path) -> None:
    (tmp_path / "allowed").mkdir()
    (tmp_path / "allowed_evil").mkdir()
    workspace = Workspace(tmp_path / "allowed")
    with pytest.raises(WorkspaceError, match=OUTSIDE):
        workspace.resolve(str(tmp_path / "allowed_evil" / "x"))
    with pytest.raises(WorkspaceError, match=OUTSIDE):
        workspace.resolve("../allowed_evil/x")
    assert workspace.resolve(str(tmp_path / "allowed" / "x")) == tmp_path / "allowed" / "x"

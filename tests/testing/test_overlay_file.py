"""Overlay files: the YAML format, and every mistake in one go as `file:line:col: message`."""

from __future__ import annotations

from pathlib import Path

import pytest

from jianmu_bt.loader import load_tree
from jianmu_bt.testing import OverlayError, load_overlay, open_tree, run_tree


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files are named relative to the working directory in messages: work in tmp_path."""
    monkeypatch.chdir(tmp_path)


def write(tmp_path: Path, text: str, name: str = "test.overlay.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(OverlayError) as caught:
        load_overlay(path)
    return [str(d) for d in caught.value.diagnostics]


def test_a_file_substitutes_tools_nodes_and_the_model(tree_file: Path, tmp_path: Path):
    (tmp_path / "fakes.py").write_text(
        "def calc(expression):\n    return 'fake ' + expression\n", encoding="utf-8"
    )
    overlay = write(
        tmp_path,
        """\
version: 1
description: the shop, offline
llm:
  replies:
    - tool_calls: [{name: calculator, arguments: {expression: "1 + 1"}}]
    - "checked"
tools:
  calculator: {function: "fakes:calc"}
  read_file:
    calls:
      - {arguments: {path: note.txt}, result: "a recorded note"}
nodes:
  Sum: {result: "5"}
""",
    )
    tree = open_tree(tree_file, overlay)
    try:
        run = run_tree(tree)
    finally:
        tree.close()
    assert run.succeeded, run.reason
    assert (run.state["total"], run.state["note"], run.state["answer"]) == (
        "5",
        "a recorded note",
        "checked",
    )
    assert [c.output for c in run.calls("calculator")] == ["5", "fake 1 + 1"]


def test_every_mistake_of_the_file_is_reported_at_once_with_its_place(tmp_path: Path):
    path = write(
        tmp_path,
        """\
version: 1
tools:
  calculator: {reslt: 3}
  read_file: {result: 1, error: boom}
  bash: {function: "nowhere_module:fn"}
llm: {replies: [{contnet: hi}]}
nodes:
  Sum:
    calls: [{arguments: {}}]
""",
    )
    found = problems(path)
    file = "test.overlay.yaml"
    assert len(found) == 3, found  # the model's errors; references are checked after
    assert found[0].startswith(f"{file}:3:16: error: unknown key 'reslt'")
    assert "(did you mean 'result'?)" in found[0]
    assert found[1] == (
        f"{file}:4:14: error: in 'tools.read_file': give exactly one of result, error, calls, "
        "function (got result, error)"
    )
    assert found[2].startswith(f"{file}:9:13: error: in 'calls[0]': a recorded call has either")


def test_references_and_replies_are_checked_with_their_places(tmp_path: Path):
    path = write(
        tmp_path,
        """\
tools:
  bash: {function: "nowhere_module:fn"}
llm: {replies: [{contnet: hi}]}
""",
    )
    found = problems(path)
    assert found == [
        "test.overlay.yaml:2:20: error: cannot resolve 'nowhere_module:fn': no module named "
        "'nowhere_module'",
        "test.overlay.yaml:3:16: error: llm: replies[0]: unknown key(s) 'contnet' in a scripted "
        "reply (allowed: content, finish_reason, tool_calls, usage)",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "test.overlay.yaml:1:1: error: the file is empty"),
        ("- a\n- b\n", "an overlay file is a mapping (version, llm, tools, nodes), got list"),
        ("tools: {calculator: [\n", "test.overlay.yaml:2:1: error:"),
        ("version: 2\n", "test.overlay.yaml:1:10: error: version: input should be 1"),
    ],
)
def test_broken_files_are_one_clear_error(tmp_path: Path, text: str, message: str):
    found = problems(write(tmp_path, text))
    assert any(message in line for line in found), found


def test_a_missing_file_is_named(tmp_path: Path):
    assert problems(tmp_path / "nope.yaml") == ["nope.yaml:1:1: error: file not found: nope.yaml"]
    (tmp_path / "folder").mkdir()
    assert problems(tmp_path / "folder") == [
        "folder:1:1: error: folder is a directory, not an overlay file"
    ]
    (tmp_path / "latin1.yaml").write_bytes(b"tools: {caf\xe9: {result: 1}}\n")
    assert problems(tmp_path / "latin1.yaml") == [
        "latin1.yaml:1:1: error: latin1.yaml is not UTF-8 text (invalid continuation byte at "
        "byte 11)"
    ]


def test_rules_the_tree_lacks_point_at_their_keys(tree_file: Path, tmp_path: Path):
    path = write(
        tmp_path,
        "tools:\n  calculator: {result: 1}\n  web_fetch: {result: 2}\n"
        "nodes:\n  Sum: {result: 3}\n  Helpr: {llm: {replies: [x]}}\n",
    )
    overlay = load_overlay(path)
    tree = load_tree(tree_file)
    try:
        with pytest.raises(OverlayError) as caught:
            overlay.apply(tree)
    finally:
        tree.close()
    found = [str(d) for d in caught.value.diagnostics]
    assert len(found) == 2
    assert found[0].startswith("test.overlay.yaml:3:3: error: the tree has no tool 'web_fetch'")
    assert found[1].startswith(
        "test.overlay.yaml:6:3: error: the tree has no node 'Helpr' (did you mean 'Helper'?)"
    )


def test_tool_names_differing_only_in_case_are_reported_at_the_second(tmp_path: Path):
    path = write(
        tmp_path,
        "tools:\n  calculator: {result: 1}\n  Calculator: {result: 2}\n"
        "nodes:\n  Helper:\n    tools:\n"
        "      read_file: {result: a}\n      READ_FILE: {result: b}\n",
    )
    assert problems(path) == [
        "test.overlay.yaml:3:3: error: tools 'calculator' and 'Calculator' differ only in case: "
        "tool names are case-insensitive, so give the substitute once (the first is on line 2)",
        "test.overlay.yaml:8:7: error: tools 'read_file' and 'READ_FILE' differ only in case: "
        "tool names are case-insensitive, so give the substitute once (the first is on line 7)",
    ]

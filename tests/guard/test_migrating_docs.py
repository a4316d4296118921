"""docs/migrating.md runs as written: each ```python block marked `<!-- runnable -->` (our side of
each workflow) runs, in order and in one namespace, and prints exactly its `#> ` comments; the
blocks not marked are the other libraries' side; the page is linked from both indexes."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterator

import py_trees
import pytest
from runnable_docs import DOCS, run_blocks

PAGE = DOCS / "migrating.md"
OTHER_SIDE = re.compile(r"^(from|import) (langgraph|langchain_core)\b", re.M)


@pytest.fixture
def clean_blackboard() -> Iterator[None]:
    """The plain py_trees example writes global blackboard keys: leave the blackboard as found."""
    before = set(py_trees.blackboard.Blackboard.storage)
    yield
    for key in set(py_trees.blackboard.Blackboard.storage) - before:
        py_trees.blackboard.Blackboard.unset(key)


def test_every_runnable_block_runs_and_prints_what_the_page_says(
    capsys, tmp_path, monkeypatch, clean_blackboard
):
    monkeypatch.chdir(tmp_path)
    blocks = run_blocks("migrating.md", capsys)
    assert len(blocks) >= 9
    for kind in ("load_tree(", "PythonTree(", "tree.resume(", "tree.fork(", "answers=", "remap"):
        assert any(kind in block for block in blocks), kind


def test_every_python_block_not_marked_runnable_is_another_librarys():
    text = PAGE.read_text(encoding="utf-8")
    marked = re.findall(r"<!-- runnable -->\n```python\n(.*?)```", text, re.S)
    every = re.findall(r"```python\n(.*?)```", text, re.S)
    others = [block for block in every if block not in marked]
    assert len(others) == 2
    assert all(OTHER_SIDE.search(block) for block in others)


def test_the_page_is_in_both_indexes():
    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    assert "(docs/migrating.md)" in readme
    assert "(migrating.md)" in index


def test_the_langgraph_side_prints_what_ours_prints_when_langgraph_is_installed(
    capsys, monkeypatch
):
    pytest.importorskip("langgraph")  # installed with the `bench` extra
    text = PAGE.read_text(encoding="utf-8")
    (graph,) = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "StateGraph(" in b]
    module = types.ModuleType("docs_migrating_langgraph")  # LangGraph reads its type hints
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(graph, f"{PAGE} (the LangGraph workflow)", "exec"), module.__dict__)
    promised = re.findall(r"^#> (.*)$", graph, re.M)
    assert capsys.readouterr().out.splitlines() == promised
    ours = re.findall(r"^#> (.*)$", text.replace(graph, ""), re.M)
    assert all(line in ours for line in promised)  # the same lines from our side

"""Layers are folders and imports point down only; no circles (docs/architecture.md).

The order comes from docs/architecture.md, the imports from the source (import_graph.py): this
test fails on any upward import, any import of the package root, and any import circle, lazy
imports included.
"""

import ast

import networkx as nx
import pytest
from import_graph import (
    PACKAGE,
    REPO,
    arrows,
    layer_of,
    layer_order,
    layers_dot,
    modules,
    ranks,
    relative_imports,
    targets,
)


def where(arrow) -> str:
    return f"{modules()[arrow.source].relative_to(REPO)}:{arrow.line}: imports {arrow.target}"


def test_the_order_is_read_from_the_architecture_document():
    levels = layer_order()
    assert levels[0] == ["tools"] and levels[-1] == ["cli"]
    assert ["guard", "llm"] in levels
    assert ranks()["tools.builtin"] > ranks()["sandbox"] > ranks()["tools"]


def test_every_layer_folder_is_ranked():
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders <= set(ranks())
    assert set(ranks()) <= {*folders, "tools.builtin"}


def test_imports_point_down_only():
    known = ranks()
    violations = []
    for arrow in arrows():
        own, other = layer_of(arrow.source, known), layer_of(arrow.target, known)
        if own is None or other is None or own == other:
            continue
        if known[other] >= known[own]:
            violations.append(f"{where(arrow)} ({own} -> {other})")
    assert violations == []


def test_no_module_imports_the_package_root():
    # The root is a lazy facade over every layer: importing it from inside would be an upward
    # import and a circle.
    assert [where(a) for a in arrows() if a.target == "jianmu_bt"] == []


def test_no_import_circles():
    graph = nx.DiGraph()
    graph.add_edges_from((a.source, a.target) for a in arrows() if a.source != "jianmu_bt")
    circles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert circles == []


def test_absolute_imports_only():
    assert relative_imports() == []


def test_the_checker_sees_lazy_imports_and_module_strings():
    # Function-level imports, TYPE_CHECKING imports and "module:attr" strings all count.
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from jianmu_bt.nodes import ToolNode\n"
        "def later():\n    import jianmu_bt.loader\n"
        "LAZY = {'x': 'jianmu_bt.cli.app:main', 'y': 'jianmu_bt.viz'}\n"
    )
    found = set()
    for node in ast.walk(ast.parse(source)):
        found |= targets(node, modules())
    assert found == {"jianmu_bt.nodes", "jianmu_bt.loader", "jianmu_bt.cli.app", "jianmu_bt.viz"}


def test_the_picture_is_up_to_date():
    dot_file = REPO / "docs" / "layers.dot"
    if not dot_file.exists() or dot_file.read_text() != layers_dot():
        pytest.fail("docs/layers.dot is stale: run `python tests/import_graph.py`")
    assert (REPO / "docs" / "layers.svg").exists()

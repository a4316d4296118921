"""The tree as the page draws it: its nodes (pre-order, with parents) and, when Graphviz is
installed, an SVG drawn from our DOT.

Node `index` is the pre-order position, so the DOT ids (`n0`, `n1`, ... from
`jianmu_bt.viz.synthetic_ids`) and the SVG's `<title>`s name nodes by index. A node is also
known by its py_trees `id` (in live events and traces), its stable `key` (the loader's node id,
in durable runs' checkpoints and journal) and its name; the page resolves events through all
three. Without a loaded tree (a trace alone), the nodes come from the trace's `tree.nodes` event.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import py_trees

from jianmu_bt.viewer.node_facts import NodeFacts, SourceFiles, analyse_file
from jianmu_bt.viz.dot import PLAIN_FILL, STATUS_COLOURS, quote, tree_to_dot
from jianmu_bt.viz.kinds import SHAPES, describe_node
from jianmu_bt.viz.render import RenderError, render_dot
from jianmu_bt.viz.traversal import walk

logger = logging.getLogger(__name__)

#: Seconds Graphviz may take to lay out the tree before the page falls back to its own layout.
DOT_TIMEOUT = 60.0


@dataclass
class TreeView:
    """What `/api/tree` returns: the title, the nodes, the SVG (or why there is none)."""

    title: str
    nodes: list[dict[str, Any]] = field(default_factory=list)
    svg: str | None = None
    layout_note: str = ""

    def as_json(self) -> dict[str, Any]:
        """The JSON document the page reads."""
        return {
            "title": self.title,
            "nodes": self.nodes,
            "svg": self.svg,
            "layout_note": self.layout_note,
            "colours": {status.value: colour for status, colour in STATUS_COLOURS.items()},
            "plain": PLAIN_FILL,
            "shapes": SHAPES,
        }


def _svg(dot_text: str, use_graphviz: bool) -> tuple[str | None, str]:
    if not use_graphviz:
        return None, "laid out in the browser"
    try:
        svg = render_dot(dot_text, "svg", timeout=DOT_TIMEOUT).decode("utf-8")
    except RenderError as exc:  # GraphvizNotFoundError included: the page lays the tree out
        logger.info("viewer: no Graphviz layout (%s)", exc)
        return None, f"laid out in the browser ({str(exc).split('.')[0]})"
    # Drop the XML prolog and DOCTYPE so the SVG can be put inline into the page.
    start = svg.find("<svg")
    return (svg[start:] if start >= 0 else svg), "laid out by Graphviz"


def view_of_tree(
    root: py_trees.behaviour.Behaviour,
    *,
    title: str,
    path: Path | None = None,
    use_graphviz: bool = True,
) -> TreeView:
    """The view of a built tree; `path` is its YAML file (for the node panel's source)."""
    facts = analyse_file(path)
    sources = SourceFiles()
    index_of = {id(node): index for index, node in enumerate(walk(root))}
    nodes = []
    for index, node in enumerate(walk(root)):
        look = describe_node(node)
        info = getattr(node, "jianmu", None)
        key = getattr(info, "id", None)
        fact = facts.get(key or "") or facts.get(getattr(info, "group", None) or "")
        fact = fact or NodeFacts(None)
        line = int(getattr(info, "line", 0) or 0)
        nodes.append(
            {
                "index": index,
                "parent": index_of.get(id(node.parent)) if node.parent is not None else None,
                "id": str(node.id),
                "key": key,
                "name": node.name,
                "kind": look.kind,
                "shape": look.shape,
                "detail": look.detail,
                "location": f"{info.file}:{info.line}" if info is not None else "",
                "source": sources.block(fact.path, line),
                "reads": list(fact.reads),
                "writes": list(fact.writes),
            }
        )
    dot_text = tree_to_dot(root, statuses={}, title=title)
    svg, note = _svg(dot_text, use_graphviz)
    return TreeView(title, nodes, svg, note)


def view_of_trace_nodes(
    entries: Sequence[Mapping[str, Any]], *, title: str, use_graphviz: bool = True
) -> TreeView:
    """The view of a tree known only from a trace's `tree.nodes` event (pre-order entries
    with `id`, `name`, `kind` and `parent`, as `viz.tree_nodes_data` writes them)."""
    nodes: list[dict[str, Any]] = []
    for index, entry in enumerate(entries):
        # `kind` as viz.kinds names it (recorded by `tree_nodes_data`); anything else is drawn
        # as a plain behaviour.
        kind = str(entry.get("kind", ""))
        kind = kind if kind in SHAPES else "behaviour"
        parent = entry.get("parent")
        nodes.append(
            {
                "index": index,
                "parent": parent if isinstance(parent, int) and 0 <= parent < index else None,
                "id": str(entry.get("id", "")),
                "key": None,
                "name": str(entry.get("name", f"node {index}")),
                "kind": kind,
                "shape": SHAPES[kind],
                "detail": "",
                "location": "",
                "source": "",
                "reads": [],
                "writes": [],
            }
        )
    dot_lines = [f"digraph {quote(title)} {{", f"label={quote(title)}; labelloc=t; ordering=out;"]
    dot_lines.append(
        f'node [style=filled, fillcolor="{STATUS_COLOURS[py_trees.common.Status.INVALID]}", '
        "fontname=Helvetica, fontsize=11];"
    )
    for node in nodes:
        label = quote(f"{node['name']}\n{node['kind']}")
        dot_lines.append(f"n{node['index']} [label={label}, shape={node['shape']}];")
        if node["parent"] is not None:
            dot_lines.append(f"n{node['parent']} -> n{node['index']};")
    dot_lines.append("}")
    svg, note = _svg("\n".join(dot_lines), use_graphviz)
    return TreeView(title, nodes, svg, note)

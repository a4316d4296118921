"""Our DOT writer: a py_trees tree as a Graphviz digraph, built with pydot objects.

- Node ids are synthetic (`n0`, `n1`, ... in pre-order, the root first), never the node names:
  names may contain colons (a DOT port separator) or repeat, and py_trees' own `dot_tree` breaks
  on both. The same tree always gives the same ids, so two drawings of it diff cleanly.
- Labels read "name" over "kind: detail" (a tool step shows its tool, a condition its
  expression, an agent loop its maximum of iterations); shapes follow the node kind (see
  `jianmu_bt.viz.kinds`).
- Agent subtrees (what `react_agent` or the YAML `agent` node builds) are drawn as clusters.
- Given `statuses` ({str(node.id): Status}, e.g. `runner.node_statuses()` or a trace's last
  statuses), nodes are filled by status: SUCCESS green, FAILURE red, RUNNING yellow, INVALID grey.
- A legend (a cluster beside the tree, `legend=False` leaves it out) shows the shape of each node
  kind the tree has and, when statuses are drawn, the status colours.

Every text that reaches the DOT output is quoted and escaped here, so any name parses with
Graphviz's `dot`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import py_trees
import pydot
from py_trees.common import Status

from jianmu_bt.viz.kinds import SHAPES, agent_loop_of, describe_node, is_agent_root, shorten
from jianmu_bt.viz.traversal import StatusMap, as_status, walk

#: Fill colour per status.
STATUS_COLOURS: dict[Status, str] = {
    Status.SUCCESS: "#9be39b",
    Status.FAILURE: "#f4a0a0",
    Status.RUNNING: "#ffe27a",
    Status.INVALID: "#dddddd",
}
#: Fill colour of a node when no statuses are given.
PLAIN_FILL = "#ffffff"
#: Longest node name drawn in a label; the tooltip carries the full one.
NAME_CHARS = 40


def quote(text: str) -> str:
    """`text` as a DOT double-quoted string (backslashes, quotes and line breaks escaped)."""
    escaped = (
        str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\r", "").replace("\n", "\\n")
    )
    return f'"{escaped}"'


def synthetic_ids(root: py_trees.behaviour.Behaviour) -> dict[str, str]:
    """str(node.id) -> its DOT id (`n0` for the root, then pre-order)."""
    return {str(node.id): f"n{index}" for index, node in enumerate(walk(root))}


def _root_of(tree: Any) -> tuple[py_trees.behaviour.Behaviour, str | None]:
    # Accept a behaviour, a py_trees BehaviourTree or our loader's Tree (anything with `.root`).
    if isinstance(tree, py_trees.behaviour.Behaviour):
        return tree, None
    root = getattr(tree, "root", None)
    if isinstance(root, py_trees.behaviour.Behaviour):
        return root, getattr(tree, "name", None)
    raise TypeError(
        f"expected a py_trees Behaviour or a tree with .root, got {type(tree).__name__}"
    )


def _node_attributes(
    node: py_trees.behaviour.Behaviour, statuses: StatusMap | None
) -> dict[str, str]:
    look = describe_node(node)
    label = f"{shorten(node.name, NAME_CHARS)}\n{look.caption}"
    tooltip = f"{node.name} ({type(node).__name__})"
    attributes = {"label": quote(label), "shape": look.shape}
    if statuses is not None:
        status = as_status(statuses.get(str(node.id))) or Status.INVALID
        attributes["fillcolor"] = quote(STATUS_COLOURS[status])
        tooltip += f" {status.value}"
        if status == Status.FAILURE and node.feedback_message:
            tooltip += f": {node.feedback_message}"
    attributes["tooltip"] = quote(tooltip)
    return attributes


def _agent_cluster(node: py_trees.behaviour.Behaviour, index: int) -> pydot.Cluster:
    loop = agent_loop_of(node)
    limit = f" (max {loop.max_iterations} iterations)" if loop is not None else ""
    return pydot.Cluster(
        f"agent{index}",
        label=quote(f"agent: {shorten(node.name, NAME_CHARS)}{limit}"),
        style=quote("rounded,dashed"),
        color=quote("#4a6fa5"),
        fontcolor=quote("#4a6fa5"),
    )


def tree_to_pydot(
    tree: Any,
    statuses: StatusMap | None = None,
    *,
    title: str | None = None,
    rankdir: str = "TB",
    legend: bool = True,
) -> pydot.Dot:
    """The tree as a `pydot.Dot` (see the module docstring for ids, labels, shapes, colours).

    `tree` is a py_trees Behaviour (the root), a `py_trees.trees.BehaviourTree` or a loaded
    jianmu Tree. `title` names the graph (default: the tree's name or the root's name).
    `legend` adds the key of shapes (and colours, with `statuses`).
    """
    root, tree_name = _root_of(tree)
    title = title or tree_name or root.name
    graph = pydot.Dot(
        graph_name=quote(title),
        graph_type="digraph",
        rankdir=rankdir,
        ordering="out",
        newrank="true",
        label=quote(title),
        labelloc="t",
        fontname="Helvetica",
    )
    graph.set_node_defaults(
        style="filled", fillcolor=quote(PLAIN_FILL), fontname="Helvetica", fontsize="11"
    )
    graph.set_edge_defaults(arrowsize="0.7")
    ids = synthetic_ids(root)
    clusters = 0
    # Iterative, so a very deep tree cannot exhaust Python's recursion limit.
    stack: list[tuple[py_trees.behaviour.Behaviour, pydot.Graph]] = [(root, graph)]
    while stack:
        node, container = stack.pop()
        if is_agent_root(node):
            cluster = _agent_cluster(node, clusters)
            clusters += 1
            # pydot annotates Subgraph only; its add_subgraph checks for Subgraph or Cluster.
            container.add_subgraph(cluster)  # type: ignore[arg-type]
            container = cluster
        node_id = ids[str(node.id)]
        container.add_node(pydot.Node(node_id, obj_dict=None, **_node_attributes(node, statuses)))
        for child in node.children:
            graph.add_edge(pydot.Edge(node_id, ids[str(child.id)]))
        if len(node.children) > 1 and _has_cluster(node):
            # Graphviz places clusters after other nodes; an invisible chain on one rank keeps
            # the children left to right in tick order.
            siblings = pydot.Subgraph(rank="same")
            child_ids = [ids[str(child.id)] for child in node.children]
            for left, right in itertools.pairwise(child_ids):
                siblings.add_edge(pydot.Edge(left, right, style="invis"))
            graph.add_subgraph(siblings)
        stack.extend((child, container) for child in reversed(node.children))
    if legend:
        kinds = dict.fromkeys(describe_node(node).kind for node in walk(root))
        graph.add_subgraph(_legend(kinds, with_statuses=statuses is not None))  # type: ignore[arg-type]
        # Below the tree: an invisible edge from the deepest node.
        graph.add_edge(pydot.Edge(ids[str(_deepest(root).id)], "legend0", style="invis"))
    return graph


def _deepest(root: py_trees.behaviour.Behaviour) -> py_trees.behaviour.Behaviour:
    """The first node of the greatest depth (pre-order)."""
    best, best_depth = root, 0
    stack = [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > best_depth:
            best, best_depth = node, depth
        stack.extend((child, depth + 1) for child in reversed(node.children))
    return best


def _legend(kinds: Iterable[str], *, with_statuses: bool) -> pydot.Cluster:
    """A cluster with one small node per kind (its shape) and per status (its colour)."""
    legend = pydot.Cluster(
        "legend",
        label=quote("legend"),
        style=quote("rounded"),
        color=quote("#aaaaaa"),
        fontcolor=quote("#666666"),
        fontsize="10",
        rank="same",  # one row
    )
    keys = [(f"kind: {kind}", SHAPES[kind], PLAIN_FILL) for kind in kinds]
    if with_statuses:
        keys += [(status.value.lower(), "box", colour) for status, colour in STATUS_COLOURS.items()]
    ids = [f"legend{index}" for index in range(len(keys))]
    for node_id, (label, shape, fill) in zip(ids, keys, strict=True):
        legend.add_node(
            pydot.Node(
                node_id, label=quote(label), shape=shape, fillcolor=quote(fill), fontsize="9"
            )
        )
    for left, right in itertools.pairwise(ids):  # left to right, in this order
        legend.add_edge(pydot.Edge(left, right, style="invis"))
    return legend


def _has_cluster(node: py_trees.behaviour.Behaviour) -> bool:
    """True when any child of `node` is drawn as a cluster (an agent subtree)."""
    return any(is_agent_root(child) for child in node.children)


def tree_to_dot(
    tree: Any,
    statuses: StatusMap | None = None,
    *,
    title: str | None = None,
    rankdir: str = "TB",
    legend: bool = True,
) -> str:
    """The tree as DOT text (parses with Graphviz's `dot`); arguments as in `tree_to_pydot`."""
    return tree_to_pydot(tree, statuses, title=title, rankdir=rankdir, legend=legend).to_string()

"""The DOT writer: synthetic ids, labels, shapes per kind, agent clusters, status colours."""

import re

import py_trees
import pydot
import pytest
from py_trees.common import Status
from viz_trees import Task, agent, explode, mixed_tree, multiply

from jianmu_bt.nodes import ToolExecutor, ToolNode
from jianmu_bt.runtime import StateManager, TreeRunner
from jianmu_bt.viz import (
    STATUS_COLOURS,
    describe_node,
    quote,
    synthetic_ids,
    tree_to_dot,
    tree_to_pydot,
    walk,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pydot's parser


def parsed(text: str) -> pydot.Dot:
    (graph,) = pydot.graph_from_dot_data(text)
    return graph


LEGEND = "cluster_legend"


def all_nodes(graph: pydot.Graph) -> dict[str, pydot.Node]:
    """The tree's nodes (not the legend's)."""
    nodes = {n.get_name(): n for n in graph.get_nodes() if n.get_name() not in ("node", "edge")}
    for sub in graph.get_subgraphs():
        if sub.get_name() != LEGEND:
            nodes.update(all_nodes(sub))
    return nodes


def clusters_of(graph: pydot.Graph) -> list[pydot.Subgraph]:
    """The agent clusters (the unnamed rank=same subgraphs only order siblings)."""
    return [
        sub
        for sub in graph.get_subgraphs()
        if sub.get_name().startswith("cluster") and sub.get_name() != LEGEND
    ]


def legend_labels(graph: pydot.Graph) -> dict[str, pydot.Node]:
    (legend,) = [sub for sub in graph.get_subgraphs() if sub.get_name() == LEGEND]
    return {label(n): n for n in legend.get_nodes() if n.get_name() not in ("node", "edge")}


def test_the_legend_shows_the_shapes_of_the_kinds_present_and_the_status_colours():
    root = mixed_tree()
    keys = legend_labels(parsed(tree_to_dot(root)))
    assert {"kind: sequence", "kind: tool", "kind: selector", "kind: decorator"} <= set(keys)
    assert "kind: condition" not in keys  # only the kinds this tree has
    assert keys["kind: tool"].get("shape") == "component"
    assert not {"success", "failure"} & set(keys)  # no colours without statuses
    with_statuses = legend_labels(parsed(tree_to_dot(root, {})))
    assert with_statuses["failure"].get("fillcolor").strip('"') == STATUS_COLOURS[Status.FAILURE]
    assert LEGEND not in tree_to_dot(root, legend=False)


def label(node: pydot.Node) -> str:
    return node.get("label").strip('"').replace("\\n", "\n")


def test_node_ids_are_synthetic_in_preorder_never_the_names():
    root = mixed_tree()
    ids = synthetic_ids(root)
    names = [node.name for node in walk(root)]
    assert names[:4] == ["Main", "step: multiply", "Again", "Fallback"]
    assert [ids[str(n.id)] for n in walk(root)] == [f"n{i}" for i in range(len(names))]
    graph = parsed(tree_to_dot(root))
    assert sorted(all_nodes(graph)) == sorted(ids.values())
    edges = {(e.get_source(), e.get_destination()) for e in graph.get_edges()}
    tree_edges = {edge for edge in edges if not edge[1].startswith("legend")}
    assert ("n0", "n1") in edges and ("n2", "n3") in edges and len(tree_edges) == len(names) - 1


def test_the_same_tree_gives_the_same_text_twice():
    root = mixed_tree()
    assert tree_to_dot(root) == tree_to_dot(root)


def test_two_builds_of_a_tree_differ_only_in_nothing():
    # Ids come from positions, not from py_trees' random UUIDs.
    assert tree_to_dot(mixed_tree()) == tree_to_dot(mixed_tree())


def test_labels_carry_name_and_kind_and_tool_steps_show_their_tool():
    graph = parsed(tree_to_dot(mixed_tree()))
    labels = {name: label(node) for name, node in all_nodes(graph).items()}
    assert labels["n0"] == "Main\nsequence"
    assert labels["n1"] == "step: multiply\ntool: multiply"
    assert labels["n2"] == "Again\ndecorator: retry x2"
    assert labels["n3"] == "Fallback\nselector"
    assert labels["n4"] == "dup\nbehaviour: Failure"
    loop = next(text for text in labels.values() if text.startswith("Solver.loop"))
    assert loop == "Solver.loop\nagent loop: max 4 iterations"


@pytest.mark.parametrize(
    ("node", "kind", "shape"),
    [
        (py_trees.composites.Sequence("s", memory=True), "sequence", "box"),
        (py_trees.composites.Selector("s", memory=False), "selector", "octagon"),
        (
            py_trees.composites.Parallel("p", py_trees.common.ParallelPolicy.SuccessOnOne()),
            "parallel",
            "parallelogram",
        ),
        (
            py_trees.decorators.Inverter("i", py_trees.behaviours.Success("c")),
            "decorator",
            "invtrapezium",
        ),
        (ToolNode(multiply), "tool", "component"),
        (ToolExecutor([multiply]), "executor", "box3d"),
        (py_trees.behaviours.Running("r"), "behaviour", "ellipse"),
    ],
)
def test_each_kind_has_its_shape(node, kind, shape):
    look = describe_node(node)
    assert (look.kind, look.shape) == (kind, shape)
    graph = parsed(tree_to_dot(node))
    assert all_nodes(graph)["n0"].get("shape") == shape


def test_agent_parts_have_their_own_shapes():
    shapes = {n.name: describe_node(n).shape for n in walk(agent())}
    assert shapes == {
        "Solver": "box",  # the agent
        "Solver.goal": "note",
        "Solver.loop": "invhouse",
        "Solver.turn": "box",
        "Solver.llm": "hexagon",
        "Solver.tools": "box3d",
    }


def test_awkward_names_are_quoted_and_escaped():
    name = 'say "hi": C:\\new <b> {x} | y'
    root = py_trees.composites.Sequence(
        name,
        memory=True,
        children=[py_trees.behaviours.Success("graph"), ToolNode(multiply, name="node")],
    )
    text = tree_to_dot(root)
    graph = parsed(text)
    node = all_nodes(graph)["n0"]
    assert node.get("label") == quote(f"{name}\nsequence")
    assert node.get("label").startswith('"say \\"hi\\": C:\\\\new')
    # DOT keywords used as names stay labels, never ids.
    assert set(all_nodes(graph)) == {"n0", "n1", "n2"}


def test_long_names_and_details_are_shortened_in_labels():
    long = "x" * 100
    root = ToolNode(multiply, name=long)
    text = label(all_nodes(parsed(tree_to_dot(root)))["n0"])
    assert text.split("\n")[0] == "x" * 37 + "..."


def test_an_agent_subtree_is_a_cluster_holding_exactly_its_nodes():
    graph = parsed(tree_to_dot(mixed_tree()))
    (cluster,) = clusters_of(graph)
    assert cluster.get_name() == "cluster_agent0"
    assert "Solver (max 4 iterations)" in cluster.get("label")
    inside = {label(n).split("\n")[0] for n in cluster.get_nodes() if n.get_name() != "node"}
    assert inside == {
        "Solver",
        "Solver.goal",
        "Solver.loop",
        "Solver.turn",
        "Solver.llm",
        "Solver.tools",
    }


def test_two_agents_make_two_clusters_and_nested_agents_nest():
    nested_outer = agent("Outer")
    nested_outer.children[-1].decorated.add_child(agent("Inner"))
    root = py_trees.composites.Parallel(
        "Both",
        py_trees.common.ParallelPolicy.SuccessOnAll(),
        children=[agent("A"), nested_outer],
    )
    graph = parsed(tree_to_dot(root))
    clusters = clusters_of(graph)
    assert [c.get_name() for c in clusters] == ["cluster_agent0", "cluster_agent1"]
    (inner,) = clusters_of(clusters[1])
    assert "Inner" in inner.get("label")


def test_children_beside_an_agent_cluster_keep_their_tick_order():
    root = py_trees.composites.Sequence(
        "Main",
        memory=True,
        children=[
            py_trees.behaviours.Success("first"),
            agent("A"),
            py_trees.behaviours.Success("last"),
        ],
    )
    graph = parsed(tree_to_dot(root))
    ids = {label(n).split("\n")[0]: name for name, n in all_nodes(graph).items()}
    order = [sub for sub in graph.get_subgraphs() if sub.get("rank") == "same"]
    chain = [(e.get_source(), e.get_destination()) for e in order[0].get_edges()]
    assert chain == [(ids["first"], ids["A"]), (ids["A"], ids["last"])]
    assert all(e.get("style") == "invis" for e in order[0].get_edges())


def test_without_statuses_nodes_are_plain_white():
    text = tree_to_dot(mixed_tree())
    assert all(c not in text for c in STATUS_COLOURS.values())


def test_statuses_fill_nodes_by_their_final_status():
    step = ToolNode(multiply, name="Multiply", arguments={"a": 6, "b": 7}, output_key="product")
    broken = ToolNode(explode, name="Explode", arguments={"reason": "no"})
    never = py_trees.behaviours.Success("Never")
    root = py_trees.composites.Sequence("Main", memory=True, children=[step, broken, never])
    result = TreeRunner(root, StateManager(Task)).run(timeout=10)
    assert result.status == Status.FAILURE
    graph = parsed(tree_to_dot(root, result.node_statuses))
    fills = {
        label(n).split("\n")[0]: n.get("fillcolor").strip('"') for n in all_nodes(graph).values()
    }
    assert fills == {
        "Main": STATUS_COLOURS[Status.FAILURE],
        "Multiply": STATUS_COLOURS[Status.SUCCESS],
        "Explode": STATUS_COLOURS[Status.FAILURE],
        "Never": STATUS_COLOURS[Status.INVALID],
    }
    tooltip = all_nodes(graph)["n2"].get("tooltip")
    assert "FAILURE" in tooltip and "no" in tooltip


def test_status_names_are_accepted_as_text_and_running_is_yellow():
    root = py_trees.behaviours.Running("Busy")
    text = tree_to_dot(root, {str(root.id): "running"})
    assert STATUS_COLOURS[Status.RUNNING] in text


def test_a_tree_object_with_root_and_name_is_accepted():
    class Holder:
        name = "Holder tree"
        root = mixed_tree()

    graph = tree_to_pydot(Holder())
    assert graph.get_name() == quote("Holder tree")
    with pytest.raises(TypeError, match="expected a py_trees Behaviour"):
        tree_to_dot(object())


def test_a_very_deep_tree_is_drawn_without_recursion():
    node = py_trees.behaviours.Success("leaf")
    for index in range(3000):
        node = py_trees.decorators.Inverter(f"inv{index}", node)
    text = tree_to_dot(node)
    assert re.search(r"\bn3000 \[", text)

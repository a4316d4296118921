"""The plain-text status view used by `jianmu run --watch`."""

import py_trees
from py_trees.common import Status
from viz_trees import Task, explode, multiply

from jianmu_bt.nodes import ToolNode
from jianmu_bt.runtime import StateManager, TreeRunner
from jianmu_bt.viz import status_lines


def test_lines_show_markers_kinds_depth_and_failure_reasons():
    root = py_trees.composites.Sequence(
        "Main",
        memory=True,
        children=[
            ToolNode(multiply, name="Multiply", arguments={"a": 2, "b": 3}, output_key="product"),
            ToolNode(explode, name="Explode", arguments={"reason": "disk on fire"}),
            py_trees.behaviours.Success("Never"),
        ],
    )
    result = TreeRunner(root, StateManager(Task)).run(timeout=10)
    assert result.status == Status.FAILURE
    assert status_lines(root, result.node_statuses) == [
        "[x] Main (sequence)",
        "  [+] Multiply (tool: multiply)",
        "  [x] Explode (tool: explode) -- Error: RuntimeError: disk on fire",
        "  [ ] Never (behaviour: Success)",
    ]


def test_without_a_mapping_the_nodes_current_statuses_are_shown():
    root = py_trees.composites.Selector(
        "Pick", memory=False, children=[py_trees.behaviours.Running("Busy")]
    )
    root.tick_once()
    assert status_lines(root, indent=4) == [
        "[*] Pick (selector: no memory)",
        "    [*] Busy (behaviour: Running)",
    ]

"""Statuses from a run's JSONL trace, mapped onto the same tree or a rebuilt copy of it."""

import json

import py_trees
import pytest
from py_trees.common import Status
from viz_trees import Task, mixed_tree

from jianmu_bt.runtime import StateManager, TraceWriter, TreeRunner
from jianmu_bt.viz import (
    TREE_NODES_EVENT,
    TraceFormatError,
    last_statuses,
    load_trace,
    statuses_for_tree,
    tree_nodes_data,
    walk,
)


def traced_run(tmp_path, root, *, layout: bool):
    runner = TreeRunner(root, StateManager(Task))
    path = tmp_path / "run.jsonl"
    with TraceWriter(path) as writer:
        runner.events.subscribe(writer)
        if layout:
            runner.events.emit(TREE_NODES_EVENT, nodes=tree_nodes_data(root))
        result = runner.run(timeout=10)
    return result, path


def by_name(root, statuses):
    return {node.name: statuses.get(str(node.id)) for node in walk(root)}


def test_last_status_per_node_id_matches_the_run(tmp_path):
    root = mixed_tree()
    result, path = traced_run(tmp_path, root, layout=False)
    assert result.ok
    statuses = last_statuses(load_trace(path))
    ticked = {k: v for k, v in result.node_statuses.items() if v != Status.INVALID}
    assert {k: v for k, v in statuses.items() if v != Status.INVALID} == ticked
    assert statuses_for_tree(root, load_trace(path)) == statuses


def test_a_rebuilt_tree_is_coloured_by_position_from_the_layout_event(tmp_path):
    _, path = traced_run(tmp_path, mixed_tree(), layout=True)
    copy = mixed_tree()
    statuses = statuses_for_tree(copy, load_trace(path))
    names = by_name(copy, statuses)
    # Two nodes named "dup" (a Failure, then a Success): their positions tell them apart.
    dups = [statuses.get(str(n.id)) for n in walk(copy) if n.name == "dup"]
    assert dups == [Status.FAILURE, Status.SUCCESS]
    assert names["Main"] == Status.SUCCESS and names["Solver.llm"] == Status.SUCCESS


def test_without_a_layout_unique_names_are_matched_and_repeated_ones_skipped(tmp_path):
    _, path = traced_run(tmp_path, mixed_tree(), layout=False)
    copy = mixed_tree()
    names = by_name(copy, statuses_for_tree(copy, load_trace(path)))
    assert names["step: multiply"] == Status.SUCCESS and names["Fallback"] == Status.SUCCESS
    assert names["dup"] is None


def test_a_layout_of_another_tree_falls_back_to_names(tmp_path):
    _, path = traced_run(tmp_path, mixed_tree(), layout=True)
    other = py_trees.composites.Sequence(
        "Main", memory=True, children=[py_trees.behaviours.Success("Fallback")]
    )
    statuses = statuses_for_tree(other, load_trace(path))
    assert by_name(other, statuses) == {"Main": Status.SUCCESS, "Fallback": Status.SUCCESS}


def test_a_broken_trace_line_is_reported_with_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"type": "tree.tick"}) + "\n\n{not json\n")
    with pytest.raises(TraceFormatError, match=r"bad\.jsonl:3: not a JSON line"):
        load_trace(path)
    path.write_text("[1, 2]\n")
    with pytest.raises(TraceFormatError, match=r"bad\.jsonl:1: not an event"):
        load_trace(path)

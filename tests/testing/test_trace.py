"""Trace questions: which nodes ran and in what order, which calls with what, how it ended;
a `jianmu run --trace` file answers them as the live run did."""

from __future__ import annotations

from pathlib import Path

import pytest

from jianmu_bt.cli import main
from jianmu_bt.testing import Overlay, Stub, Trace, open_tree, run_tree

ASK = {"tool_calls": [{"name": "calculator", "arguments": {"expression": "1 + 1"}}]}


def shop_run(tree_file: Path):  # -> TreeRun
    overlay = Overlay(tools={"read_file": Stub(result="note")}, llm=[ASK, "fine"])
    tree = open_tree(tree_file, overlay)
    try:
        return run_tree(tree)
    finally:
        tree.close()


def test_nodes_ran_in_tree_order_and_calls_with_their_arguments(tree_file: Path):
    run = shop_run(tree_file)
    ran = run.trace.nodes_ran()
    assert ran[:3] == ["Main", "Sum", "ReadNote"]  # a parent before its children
    assert ran.index("Helper") < ran.index("Helper.llm") < ran.index("Helper.tools")
    calls = run.trace.calls()
    assert [(c.tool, c.arguments, c.ok) for c in calls] == [
        ("calculator", {"expression": "2 + 3"}, True),
        ("read_file", {"path": "note.txt"}, True),
        ("calculator", {"expression": "1 + 1"}, True),
    ]
    assert run.trace.calls("CALCULATOR") == [calls[0], calls[2]]
    assert [r["text"] for r in run.trace.llm_replies()] == ["", "fine"]
    assert run.trace.statuses()["Main"] == "SUCCESS"
    assert run.trace.finished()["status"] == "SUCCESS"
    run.trace.assert_order("Main", "Sum", "Helper")
    run.trace.assert_not_ran("Nothing")


def test_order_assertions_say_what_really_happened(tree_file: Path):
    trace = shop_run(tree_file).trace
    with pytest.raises(AssertionError) as caught:
        trace.assert_order("ReadNote", "Sum")
    assert str(caught.value) == "expected the order ['ReadNote', 'Sum'], the nodes ran as " + (
        "['Sum', 'ReadNote']"
    )
    with pytest.raises(AssertionError, match="node\\(s\\) 'Sun' did not run; nodes that ran: "):
        trace.assert_order("Sum", "Sun")
    with pytest.raises(AssertionError, match="node\\(s\\) 'Sum' ran, but should not have"):
        trace.assert_not_ran("Sum")


def test_a_trace_file_answers_as_the_live_run(
    tree_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    overlay = tmp_path / "shop.overlay.yaml"
    overlay.write_text(
        "tools: {read_file: {result: note}}\n"
        "llm: {replies: [{tool_calls: [{name: calculator, arguments: {expression: '1 + 1'}}]},"
        " fine]}\n",
        encoding="utf-8",
    )
    trace_path = tmp_path / "run.jsonl"
    code = main(
        ["run", str(tree_file), "--overlay", str(overlay), "--no-store", "--trace", str(trace_path)]
    )
    capsys.readouterr()
    assert code == 0
    from_file = Trace.from_file(trace_path)
    live = shop_run(tree_file).trace
    assert from_file.nodes_ran() == live.nodes_ran()
    assert [(c.tool, c.arguments, c.output) for c in from_file.calls()] == [
        (c.tool, c.arguments, c.output) for c in live.calls()
    ]


def test_a_trace_without_a_layout_keeps_the_event_order():
    trace = Trace(
        [
            {"type": "node.status", "node": "Child", "id": "2", "old": "INVALID", "new": "RUNNING"},
            {"type": "node.status", "node": "Root", "id": "1", "old": "INVALID", "new": "RUNNING"},
            {"type": "tree.tick"},
            {"type": "node.status", "node": "Late", "id": "3", "old": "INVALID", "new": "SUCCESS"},
            {"type": "node.status", "node": "Child", "id": "2", "old": "RUNNING", "new": "SUCCESS"},
        ]
    )
    assert trace.nodes_ran() == ["Child", "Root", "Late"]
    assert trace.calls() == [] and trace.finished() is None

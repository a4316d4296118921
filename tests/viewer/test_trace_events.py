"""What a trace records and reading it back: one `state.write` per write however many recorders
ask (a run viewed and traced at once); the one trace reader (tolerant of a cut-off last line);
node kinds recorded in `tree.nodes`; the node panel's facts without building the tree."""

from __future__ import annotations

import pytest
from viewer_helpers import REPO

from jianmu_bt.loader import load_tree
from jianmu_bt.runtime import read_trace
from jianmu_bt.viz import load_trace
from jianmu_bt.viz.trace_status import TraceFormatError, read_trace_file, record_state_writes


def test_each_write_is_recorded_once_while_anyone_records():
    with load_tree(REPO / "trees" / "quickstart.yaml") as tree:
        seen = []
        tree.events.subscribe(lambda e: seen.append(e) if e.type == "state.write" else None)
        first, second = record_state_writes(tree), record_state_writes(tree)
        assert [e.data["initial"] for e in seen] == [True, True]  # each starts with the state
        assert seen[0].data["values"]["numbers"] == "2 + 3 * 4"

        def writes() -> list:
            return [e.data["values"] for e in seen if not e.data.get("initial")]

        tree.state.update({"numbers": "1 + 1"})
        assert writes() == [{"numbers": "1 + 1"}]
        first()
        first()  # stopping twice is harmless
        tree.state.update({"numbers": "1 + 2"})
        assert writes() == [{"numbers": "1 + 1"}, {"numbers": "1 + 2"}]
        second()
        tree.state.update({"numbers": "1 + 3"})
        assert len(writes()) == 2


def test_one_reader_leaves_out_a_cut_off_last_line_and_says_so(quickstart_trace, tmp_path):
    text = quickstart_trace.read_text()
    whole = load_trace(quickstart_trace)
    assert read_trace(quickstart_trace) == whole and whole[-1]["type"] == "tree.finished"
    cut = tmp_path / "cut.jsonl"
    cut.write_text(text[: len(text) - 40])
    assert load_trace(cut) == read_trace(cut) == whole[:-1]
    warnings = read_trace_file(cut).warnings
    assert any(
        "truncated" in warning and f"cut.jsonl:{len(whole)}" in warning for warning in warnings
    )
    cut.write_text(text[: len(text) - 40] + "\n")  # a whole bad line is an error, not a cut
    with pytest.raises(TraceFormatError, match=rf"cut\.jsonl:{len(whole)}: not a JSON line"):
        load_trace(cut)


def test_tree_nodes_record_the_kinds_a_replay_draws(quickstart_trace):
    from jianmu_bt.viewer import trace_source

    layout = load_trace(quickstart_trace)[0]["nodes"]
    assert [(node["kind"], node["class"]) for node in layout[:2]] == [
        ("sequence", "Sequence"),
        ("tool", "ToolNode"),
    ]
    drawn = trace_source(quickstart_trace).view.nodes  # the trace alone: kinds from the trace
    assert [node["kind"] for node in drawn] == [node["kind"] for node in layout]
    assert {"sequence", "tool", "llm"} <= {node["kind"] for node in drawn}


def test_the_node_panel_facts_come_from_the_analysis_without_building(monkeypatch):
    from jianmu_bt.loader import api, build
    from jianmu_bt.viewer.node_facts import analyse_file

    def must_not_run(*args, **kwargs):
        raise AssertionError("the viewer's analysis built the tree or made its LLM or guard")

    monkeypatch.setattr(build, "build_behaviours", must_not_run)
    monkeypatch.setattr(api, "_services", must_not_run)
    facts = analyse_file(REPO / "trees" / "quickstart.yaml")
    assert any(fact.reads == ("numbers",) and fact.writes == ("total",) for fact in facts.values())
    assert facts and all(fact.path == REPO / "trees" / "quickstart.yaml" for fact in facts.values())

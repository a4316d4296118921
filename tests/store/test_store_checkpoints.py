"""Conformance: checkpoints, history and forking a run from a checkpoint."""

import pytest
from store_helpers import entry, make_run, snapshot

from jianmu_bt.store import CheckpointNotFoundError, RunExistsError, RunNotFoundError, StoreError


@pytest.fixture
def source(store):
    """Run `src`: checkpoints 1 (position 0), 2 (position 2), 3 (position 5), 4 (position 6)."""
    store.create_run(make_run("src", inputs={"q": 1}), checkpoint={"cp": 1})
    store.append("src", None, [entry("a"), entry("b")], {"cp": 2})
    store.append("src", None, [entry("a", "done"), entry("c"), entry("b", "failed")], {"cp": 3})
    store.append("src", None, [entry("c", "done")], {"cp": 4}, status="succeeded")
    return "src"


def test_history_latest_and_single_checkpoint(store, source):
    history = store.history(source)
    assert [(cp.seq, cp.position, cp.data) for cp in history] == [
        (1, 0, {"cp": 1}),
        (2, 2, {"cp": 2}),
        (3, 5, {"cp": 3}),
        (4, 6, {"cp": 4}),
    ]
    assert all(cp.run_id == "src" for cp in history)
    assert store.latest_checkpoint(source) == history[-1]
    assert store.checkpoint(source, 3) == history[2]


def test_checkpoint_data_round_trips_json(store):
    data = {
        "state": {"text": "建木 \u0000 end", "f": 1.5, "big": 2**53, "neg": -0.0},
        "guard": {"counts": {"b": 2, "a": 1}},
        "progress": [[0, 1], {"node": None}],
        "flag": False,
    }
    store.create_run(make_run("r1"), checkpoint=data)
    got = store.checkpoint("r1", 1).data
    assert got == data
    assert list(got["guard"]["counts"]) == ["b", "a"]


def test_missing_checkpoint(store, source):
    with pytest.raises(CheckpointNotFoundError) as caught:
        store.checkpoint(source, 9)
    message = str(caught.value)
    assert message == f"run 'src' in {store.location} has no checkpoint 9 (it has checkpoints 1–4)"
    assert isinstance(caught.value, KeyError) and isinstance(caught.value, StoreError)
    with pytest.raises(RunNotFoundError):
        store.checkpoint("ghost", 1)
    with pytest.raises(RunNotFoundError):
        store.latest_checkpoint("ghost")
    with pytest.raises(RunNotFoundError):
        store.history("ghost")


def test_fork_copies_journal_and_checkpoints_up_to_seq(store, source):
    before = snapshot(store, source)
    new = store.fork(source, 3, make_run("child", status="paused", inputs={"q": 1}))
    assert (new.parent_run, new.parent_checkpoint, new.run_id) == ("src", 3, "child")
    assert store.get_run("child") == new
    log = store.journal_log("child")
    assert [(e.position, e.key, e.status) for e in log] == [
        (1, "a", "running"),
        (2, "b", "running"),
        (3, "a", "done"),
        (4, "c", "running"),
        (5, "b", "failed"),
    ]
    source_log = store.journal_log(source)[:5]
    assert [e.digest for e in log] == [e.digest for e in source_log]
    assert [e.created for e in log] == [e.created for e in source_log]
    assert [(e.key, e.status) for e in store.journal("child")] == [
        ("a", "done"),
        ("b", "failed"),
        ("c", "running"),
    ]
    history = store.history("child")
    assert [(cp.run_id, cp.seq, cp.position, cp.data) for cp in history] == [
        ("child", 1, 0, {"cp": 1}),
        ("child", 2, 5, {"cp": 3}),
    ]
    assert snapshot(store, source) == before  # the source is untouched
    # The fork continues on its own.
    assert store.append("child", None, [entry("d")], {"cp": "child-3"}) == 6
    assert store.latest_checkpoint("child").seq == 3
    assert len(store.journal_log(source)) == 6


def test_fork_from_first_checkpoint_has_one_checkpoint_and_no_journal(store, source):
    store.fork(source, 1, make_run("child"))
    assert store.journal_log("child") == []
    assert [(cp.seq, cp.position, cp.data) for cp in store.history("child")] == [(1, 0, {"cp": 1})]
    assert store.append("child", None, [entry("x")]) == 1


def test_fork_of_a_fork(store, source):
    store.fork(source, 4, make_run("child"))
    store.append("child", None, [entry("e")], {"cp": "c3"})
    grandchild = store.fork("child", 3, make_run("grandchild"))
    assert (grandchild.parent_run, grandchild.parent_checkpoint) == ("child", 3)
    assert [e.key for e in store.journal_log("grandchild")] == ["a", "b", "a", "c", "b", "c", "e"]
    assert [(cp.seq, cp.position, cp.data) for cp in store.history("grandchild")] == [
        (1, 0, {"cp": 1}),
        (2, 7, {"cp": "c3"}),
    ]


def test_fork_errors_change_nothing(store, source):
    store.create_run(make_run("taken"))
    with pytest.raises(RunExistsError, match="'taken' already exists"):
        store.fork(source, 2, make_run("taken"))
    assert store.journal_log("taken") == [] and store.history("taken") == []
    with pytest.raises(CheckpointNotFoundError, match="no checkpoint 7"):
        store.fork(source, 7, make_run("child"))
    with pytest.raises(RunNotFoundError, match="no run 'ghost'"):
        store.fork("ghost", 1, make_run("child"))
    with pytest.raises(ValueError, match="unknown run status"):
        store.fork(source, 1, make_run("child", status="odd"))
    assert sorted(r.run_id for r in store.runs()) == ["src", "taken"]


def test_delta_checkpoints_read_as_whole_documents_and_fork_whole(store):
    first = {"state": {"a": 1, "b": [1]}, "progress": {"tick": 0, "nodes": {}}, "guards": []}
    store.create_run(make_run("d"), checkpoint=first)
    deltas = [
        {"set": {"state": {"a": 2}, "progress/nodes": {"0": {"status": "RUNNING"}}}},
        {"extend": {"state/b": [2, 3]}, "put": {"progress/tick": 4}},
        {"unset": {"progress/nodes": ["0"]}, "set": {"state": {"c": {"$x": 1}}}},
    ]
    for number, delta in enumerate(deltas):
        store.append("d", None, [entry(f"k{number}")], delta, delta=True)
    store.append("d", None, [], {"state": {"full": True}})  # a full one again
    store.append("d", None, [], {"set": {"state": {"more": 1}}}, delta=True)
    expected = [
        first,
        {
            "state": {"a": 2, "b": [1]},
            "progress": {"tick": 0, "nodes": {"0": {"status": "RUNNING"}}},
            "guards": [],
        },
        {
            "state": {"a": 2, "b": [1, 2, 3]},
            "progress": {"tick": 4, "nodes": {"0": {"status": "RUNNING"}}},
            "guards": [],
        },
        {
            "state": {"a": 2, "b": [1, 2, 3], "c": {"$x": 1}},
            "progress": {"tick": 4, "nodes": {}},
            "guards": [],
        },
        {"state": {"full": True}},
        {"state": {"full": True, "more": 1}},
    ]
    assert [cp.data for cp in store.history("d")] == expected
    assert [store.checkpoint("d", seq).data for seq in range(1, 7)] == expected
    assert store.latest_checkpoint("d").data == expected[-1]
    assert store.checkpoint("d", 1).data == first  # the deltas changed no earlier document
    store.fork("d", 4, make_run("d2"))
    assert [cp.data for cp in store.history("d2")] == [first, expected[3]]


def test_a_first_checkpoint_cannot_be_a_delta_and_bad_deltas_are_refused(store):
    store.create_run(make_run("d"))
    with pytest.raises(ValueError, match="its first one cannot be a delta"):
        store.append("d", None, [entry("x")], {"set": {"state": {"a": 1}}}, delta=True)
    with pytest.raises(ValueError, match="unknown part 'change'"):
        store.append("d", None, [entry("x")], {"change": {}}, delta=True)
    assert store.journal_log("d") == [] and store.history("d") == []

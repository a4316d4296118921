"""Conformance: append (positions, checkpoints, status, atomicity) and the append-only journal."""

import dataclasses
import datetime
import threading

import pytest
from store_helpers import entry, make_run, snapshot

from jianmu_bt.store import RunNotFoundError, StoreError


def test_append_assigns_positions_and_returns_the_last(store):
    store.create_run(make_run("r1"))
    assert store.append("r1", None, [entry("a"), entry("b")]) == 2
    assert store.append("r1", None, [entry("a", "done", result={"ok": True})]) == 3
    assert store.append("r1", None) == 3  # nothing appended: still the last position
    log = store.journal_log("r1")
    assert [(e.position, e.key, e.status) for e in log] == [
        (1, "a", "running"),
        (2, "b", "running"),
        (3, "a", "done"),
    ]


def test_append_keeps_every_field(store):
    store.create_run(make_run("r1"))
    row = entry(
        "k",
        "done",
        kind="llm",
        node="agent",
        tool="model",
        arguments={"messages": [{"role": "user", "content": "你好"}], "t": 0.5},
        result={"text": "hi", "none": None, "list": [1, "2", False]},
        effectful=True,
        idempotent=True,
        created=1234.5,
        position=99,  # ignored: the store assigns positions
    )
    store.append("r1", None, [row])
    (got,) = store.journal_log("r1")
    assert got == dataclasses.replace(row, position=1)
    assert got.effectful is True and got.idempotent is True
    assert got.created == 1234.5


def test_append_sets_created_when_zero(store):
    store.create_run(make_run("r1"))
    store.append("r1", None, [entry("a")])
    assert store.journal_log("r1")[0].created > 0


def test_values_json_cannot_represent_come_back_equal_and_others_are_refused(store):
    store.create_run(make_run("r1"))
    moment = datetime.datetime(2026, 1, 2, 3, 4, 5)
    store.append("r1", None, [entry("a", arguments={"when": moment}, result=moment)])
    (got,) = store.journal_log("r1")
    assert got.arguments == {"when": moment} and got.result == moment
    with pytest.raises(TypeError, match=r"output\['at'\] is of type object"):
        store.append("r1", None, [entry("b", result={"output": {"at": object()}})])
    assert len(store.journal_log("r1")) == 1  # nothing of the refused write was recorded


def test_append_writes_checkpoint_at_last_position_and_status(store):
    store.create_run(make_run("r1"), checkpoint={"step": 0})
    before = store.get_run("r1").updated
    assert store.append("r1", None, [entry("a"), entry("b")], {"step": 1}) == 2
    store.append("r1", None, checkpoint={"step": 2}, status="paused", reason="needs approval")
    history = store.history("r1")
    assert [(cp.seq, cp.position, cp.data) for cp in history] == [
        (1, 0, {"step": 0}),
        (2, 2, {"step": 1}),
        (3, 2, {"step": 2}),
    ]
    run = store.get_run("r1")
    assert (run.status, run.reason) == ("paused", "needs approval")
    assert run.updated >= before
    store.append("r1", None, status="running")  # reason None keeps the reason
    assert store.get_run("r1").reason == "needs approval"
    store.append("r1", None, status="succeeded", reason="")
    assert (store.get_run("r1").status, store.get_run("r1").reason) == ("succeeded", "")


def test_append_to_missing_run(store):
    store.create_run(make_run("other"))
    with pytest.raises(RunNotFoundError, match=r"no run 'ghost'.*recent runs: other"):
        store.append("ghost", None, [entry("a")])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"status": "done"}, "unknown run status 'done'"),
        ({"entries": [entry("x"), entry("y", "finished")]}, "unknown call status 'finished'"),
        ({"entries": [entry("x", kind="shell")]}, "unknown kind 'shell'"),
    ],
)
def test_invalid_append_writes_nothing(store, kwargs, message):
    store.create_run(make_run("r1"), checkpoint={"v": 0})
    store.append("r1", None, [entry("a")], {"v": 1})
    before = snapshot(store, "r1")
    kwargs = {"entries": [entry("b")], "checkpoint": {"v": 2}, "status": "paused", **kwargs}
    with pytest.raises(ValueError, match=message):
        store.append("r1", None, **kwargs)
    assert snapshot(store, "r1") == before


def test_checkpoint_must_be_a_dict(store):
    store.create_run(make_run("r1"))
    with pytest.raises(TypeError, match="a checkpoint is a dict, not list"):
        store.append("r1", None, [entry("a")], [1, 2])  # type: ignore[arg-type]
    assert store.journal_log("r1") == []


def test_failure_inside_the_transaction_rolls_everything_back(store, monkeypatch):
    store.create_run(make_run("r1"), checkpoint={"v": 0})
    store.append("r1", None, [entry("a")], {"v": 1})
    before = snapshot(store, "r1")
    broken = dict(store._sql, insert_cp=store._sql["insert_cp"].replace("checkpoints", "nowhere"))
    monkeypatch.setattr(store, "_sql", broken)  # the checkpoint insert fails after the entries
    with pytest.raises(StoreError):
        store.append("r1", None, [entry("b"), entry("c")], {"v": 2}, status="paused")
    monkeypatch.undo()
    assert snapshot(store, "r1") == before
    assert store.append("r1", None, [entry("d")]) == 2  # positions continue where they were


def test_journal_is_latest_row_per_key_in_first_seen_order(store):
    store.create_run(make_run("r1"))
    store.append("r1", None, [entry("a", "held"), entry("b")])  # 1, 2
    store.append("r1", None, [entry("c")])  # 3
    store.append("r1", None, [entry("a", "approved"), entry("b", "done", result=1)])  # 4, 5
    store.append("r1", None, [entry("a", "running"), entry("a", "done", result=2)])  # 6, 7
    latest = store.journal("r1")
    assert [(e.key, e.status, e.position) for e in latest] == [
        ("a", "done", 7),
        ("b", "done", 5),
        ("c", "running", 3),
    ]
    assert latest[0].result == 2
    assert [(e.key, e.status) for e in store.journal("r1", upto=4)] == [
        ("a", "approved"),
        ("b", "running"),
        ("c", "running"),
    ]
    assert [(e.key, e.status) for e in store.journal("r1", upto=2)] == [
        ("a", "held"),
        ("b", "running"),
    ]
    assert store.journal("r1", upto=0) == []
    assert len(store.journal_log("r1")) == 7
    assert [e.position for e in store.journal_log("r1")] == list(range(1, 8))


def test_journal_of_run_without_entries_and_of_missing_run(store):
    store.create_run(make_run("r1"))
    assert store.journal("r1") == []
    assert store.journal_log("r1") == []
    with pytest.raises(RunNotFoundError):
        store.journal("missing")
    with pytest.raises(RunNotFoundError):
        store.journal_log("missing")


def test_journals_of_runs_are_separate(store):
    store.create_run(make_run("r1"))
    store.create_run(make_run("r2"))
    store.append("r1", None, [entry("a"), entry("b")])
    assert store.append("r2", None, [entry("a", "done")]) == 1
    assert [(e.key, e.status) for e in store.journal("r2")] == [("a", "done")]
    assert [e.key for e in store.journal("r1")] == ["a", "b"]


def test_threads_appending_concurrently(store):
    store.create_run(make_run("shared"), checkpoint={"n": 0})
    threads, per_thread = 6, 20
    errors: list[BaseException] = []
    start = threading.Barrier(threads + 1)

    def work(t: int) -> None:
        try:
            start.wait()
            for i in range(per_thread):
                store.append("shared", None, [entry(f"t{t}-{i}")], {"n": i})
                store.append("shared", None, [entry(f"t{t}-{i}", "done", result=i)])
                store.journal("shared")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def read() -> None:
        try:
            start.wait()
            for _ in range(20):
                store.runs()
                store.latest_checkpoint("shared")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    workers.append(threading.Thread(target=read))
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert errors == []
    log = store.journal_log("shared")
    assert [e.position for e in log] == list(range(1, 2 * threads * per_thread + 1))
    latest = store.journal("shared")
    assert len(latest) == threads * per_thread
    assert {e.status for e in latest} == {"done"}
    assert len(store.history("shared")) == 1 + threads * per_thread
    for t in range(threads):  # each thread's calls appear in its own order
        mine = [e.key for e in latest if e.key.startswith(f"t{t}-")]
        assert mine == [f"t{t}-{i}" for i in range(per_thread)]

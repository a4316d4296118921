"""The Python side of durable runs: fresh runs, pause and resume, fork, replay rules."""

from __future__ import annotations

import pytest

from jianmu_bt import tool
from jianmu_bt.loader import load_tree
from jianmu_bt.runtime.durable import DurableRunError
from jianmu_bt.runtime.journal import StoreFaultError
from jianmu_bt.store import JournalEntry, SQLiteStore, digest_arguments

CALLS: list[str] = []


@tool(effect_tags=["ledger"])
def act(name: str) -> str:
    """A side effect the test counts."""
    CALLS.append(f"act {name}")
    return f"did {name}"


@tool(read_only=True)
def look(name: str) -> str:
    """No side effect (declared read-only: it may run again after a crash)."""
    CALLS.append(f"look {name}")
    return f"saw {name}"


@tool(effect_tags=["deploy"])
def deploy(target: str) -> str:
    """Held for approval."""
    CALLS.append(f"deploy {target}")
    return f"deployed {target}"


TREE = """
version: 1
name: api
state:
  seen: {type: string}
  done: {type: string}
  note: {type: string, default: "start"}
guard: {approve: [deploy]}
root:
  sequence:
    name: Main
    children:
      - tool: {name: Look, tool: look, arguments: {name: "{note}"}, output: seen}
      - tool: {name: Act, tool: act, arguments: {name: one}, output: done}
      - tool: {name: Deploy, tool: deploy, arguments: {target: prod}}
      - tool: {name: Last, tool: act, arguments: {name: two}}
"""


@pytest.fixture(autouse=True)
def _reset_calls():
    CALLS.clear()


def _tree():
    return load_tree(TREE, tools=[act, look, deploy])


def test_every_run_is_a_fresh_run_with_its_own_id_and_state():
    with _tree() as tree:
        tree.guard.approvals.grant("deploy", uses=None)
        first = tree.run({"note": "first"})
        tree.guard.approvals.grant("deploy", uses=None)
        second = tree.run()
    assert first.ok and second.ok and first.run_id != second.run_id
    assert first.state["seen"] == "saw first"
    assert second.state["seen"] == "saw start"  # not the first run's input


def test_a_paused_run_resumes_in_a_new_tree_without_repeating_finished_steps(tmp_path):
    store = SQLiteStore(tmp_path / "runs.db")
    with _tree() as tree:
        paused = tree.run({"note": "x"}, store=store, run_id="R", hold="pause")
    assert paused.paused and paused.run_status == "paused" and paused.run_id == "R"
    assert CALLS == ["look x", "act one"]
    (held,) = [e for e in store.journal("R") if e.status == "held"]
    run = store.get_run("R")
    assert (run.status, run.lease_owner, run.lease_expires) == ("paused", None, None)
    with _tree() as again:  # as a new process would: a new tree, the same store
        done = again.resume("R", store=store, approve=[held.call_id])
    assert done.ok and done.run_status == "succeeded"
    assert CALLS == ["look x", "act one", "deploy prod", "act two"]
    assert done.state["seen"] == "saw x" and done.state["done"] == "did one"
    run = store.get_run("R")  # the outcome and the lease's release: one write
    assert (run.status, run.lease_owner, run.lease_expires) == ("succeeded", None, None)
    with _tree() as late, pytest.raises(DurableRunError, match="already succeeded"):
        late.resume("R", store=store)


def test_a_pure_call_in_flight_at_a_crash_runs_again_and_an_effectful_one_is_in_doubt(tmp_path):
    store = SQLiteStore(tmp_path / "runs.db")
    with _tree() as tree:
        tree.run(store=store, run_id="R", hold="pause")
    # Pretend the process died during Look and during Act: the journal ends with them running.
    rows = {e.key: e for e in store.journal("R")}
    look_key = next(k for k, e in rows.items() if e.tool == "look")
    act_key = next(k for k, e in rows.items() if e.tool == "act")
    for key in (look_key, act_key):
        e = rows[key]
        store.append(
            "R",
            None,
            [
                JournalEntry(
                    e.key,
                    e.call_id,
                    e.kind,
                    e.node,
                    e.tool,
                    e.arguments,
                    e.digest,
                    "running",
                    effectful=e.effectful,
                )
            ],
        )
    CALLS.clear()
    with _tree() as again:
        result = again.resume("R", store=store, hold="pause")
    assert result.paused
    assert CALLS == ["look start"]  # the pure call ran again; the effectful one did not
    statuses = {e.tool: e.status for e in store.journal("R")}
    assert statuses["act"] == "in_doubt"


def test_a_changed_call_on_replay_stops_without_recording_an_outcome(tmp_path):
    store = SQLiteStore(tmp_path / "runs.db")
    with _tree() as tree:
        tree.run(store=store, run_id="R", hold="pause")
    other = TREE.replace("name: one", "name: uno")
    with load_tree(other, tools=[act, look, deploy]) as changed:
        changed.digest = store.get_run("R").tree_digest  # same digest: only replay can tell
        with pytest.raises(DurableRunError, match="changed since the run began"):
            changed.resume("R", store=store)
    assert store.get_run("R").status == "paused"


def test_fork_continues_from_an_earlier_checkpoint_as_a_new_run(tmp_path):
    store = SQLiteStore(tmp_path / "runs.db")
    with _tree() as tree:
        tree.guard.approvals.grant("deploy", uses=None)
        assert tree.run(store=store, run_id="R").ok
    history = store.history("R")
    # The checkpoint written when Act finished: Look and Act are behind it.
    act_done = next(
        c
        for c in history
        if any(e.tool == "act" and e.status == "done" for e in store.journal("R", upto=c.position))
    )
    CALLS.clear()
    with _tree() as again:
        again.guard.approvals.grant("deploy", uses=None)
        forked = again.fork("R", act_done.seq, store=store, new_run_id="F")
    assert forked.ok and forked.run_id == "F"
    assert CALLS == ["deploy prod", "act two"]  # the steps up to the checkpoint did not re-run
    run = store.get_run("F")
    assert run.parent_run == "R" and run.status == "succeeded"


def test_the_journal_binds_a_decision_to_the_arguments(tmp_path):
    store = SQLiteStore(tmp_path / "runs.db")
    with _tree() as tree:
        tree.run(store=store, run_id="R", hold="pause")
    (held,) = [e for e in store.journal("R") if e.status == "held"]
    assert held.digest == digest_arguments("deploy", {"target": "prod"})
    with _tree() as again:
        again.resume("R", store=store, approve=[held.call_id])
    rows = [e for e in store.journal_log("R") if e.key == held.key]
    assert [e.status for e in rows] == ["held", "approved", "running", "done"]
    assert {e.digest for e in rows} == {held.digest}


def test_an_approval_given_in_this_process_is_recorded_before_the_call_runs(tmp_path):
    store = SQLiteStore(tmp_path / "runs.db")
    with _tree() as tree:

        def approve(event):
            if event.type == "guard.decision" and event.data.get("decision") == "pending":
                tree.approve(event.data["call_id"], note="ok")

        tree.events.subscribe(approve)
        assert tree.run(store=store, run_id="R").ok
    (key,) = {e.key for e in store.journal_log("R") if e.tool == "deploy"}
    rows = [e.status for e in store.journal_log("R") if e.key == key]
    assert rows == ["held", "approved", "running", "done"]


@tool(effect_tags=["ledger"])
async def slow(name: str) -> str:
    """An effectful call that takes long (the tree's Timeout cancels it)."""
    import anyio

    CALLS.append(f"slow {name}")
    await anyio.sleep(30)
    return "too late"


TIMEOUT_TREE = """
version: 1
name: timeouts
guard: {approve: [deploy]}
root:
  sequence:
    name: Main
    children:
      - selector:
          name: Either
          children:
            - timeout:
                duration: 0.2
                child: {tool: {name: Slow, tool: slow, arguments: {name: s}}}
            - tool: {name: Fallback, tool: act, arguments: {name: fallback}}
      - tool: {name: Deploy, tool: deploy, arguments: {target: prod}}
"""


def test_a_step_the_tree_cancelled_is_cancelled_again_on_replay_not_held_in_doubt(tmp_path):
    store = SQLiteStore(tmp_path / "runs.db")
    with load_tree(TIMEOUT_TREE, tools=[slow, act, deploy]) as tree:
        paused = tree.run(store=store, run_id="R", hold="pause")
    assert paused.paused and CALLS == ["slow s", "act fallback"]
    statuses = {e.tool: e.status for e in store.journal("R")}
    assert statuses == {"slow": "cancelled", "act": "done", "deploy": "held"}
    (held,) = [e for e in store.journal("R") if e.status == "held"]
    with load_tree(TIMEOUT_TREE, tools=[slow, act, deploy]) as again:
        done = again.resume("R", store=store, approve=[held.call_id])
    assert done.ok, done.reason
    # The slow step did not run again (the Timeout cancelled its replay as it did the run).
    assert CALLS == ["slow s", "act fallback", "deploy prod"]


def test_a_run_whose_lease_is_taken_over_stops_without_recording_an_outcome(tmp_path):
    store = SQLiteStore(tmp_path / "runs.db")

    @tool
    def take_over() -> str:
        """Another process takes the run's lease while this step runs."""
        run = store.get_run("R")
        store.acquire_lease("R", "host:1:other", 60, steal_from=run.lease_owner)
        return "taken"

    tree_text = """
version: 1
name: lease
root:
  sequence:
    name: Main
    children:
      - tool: {name: Take, tool: take_over}
      - tool: {name: After, tool: act, arguments: {name: after}}
"""
    with (
        load_tree(tree_text, tools=[take_over, act]) as tree,
        pytest.raises(StoreFaultError, match="lost its lease"),
    ):
        tree.run(store=store, run_id="R")
    assert "act after" not in CALLS
    run = store.get_run("R")
    assert run.status == "running" and run.lease_owner == "host:1:other"

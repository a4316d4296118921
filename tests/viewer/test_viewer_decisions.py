"""Decisions and access with a real server on 127.0.0.1 and real runs: a decision after the run
has ended is refused with how to go on, a decision is recorded on the run's own thread, a late
answer at the terminal is reported (not raised), reading needs the token, a failed stop does not
hide the error that ended the block, and `view --run` of a tree that no longer loads."""

from __future__ import annotations

import io
import re
import signal
import threading

import httpx
import pytest
from viewer_helpers import (
    GATE,
    PATIENCE,
    REPO,
    Lines,
    auth,
    jianmu_process,
    load_gated,
    serving,
)

from jianmu_bt.cli.approvals import ApprovalDesk
from jianmu_bt.viewer import (
    Source,
    TreeView,
    ViewerError,
    ViewerServer,
    live_source,
    trace_source,
)

pytestmark = pytest.mark.timeout(90)


def decide(server, call_id: str, decision: str = "approve") -> httpx.Response:
    body = {"call_id": call_id, "decision": decision}
    return httpx.post(server.url + "api/decide", json=body, headers=auth(server), timeout=30)


def wait_until(check) -> None:
    """Poll `check()` until it is true (AssertionError after PATIENCE)."""
    stop = threading.Event()
    for _ in range(int(PATIENCE / 0.05)):
        if check():
            return
        stop.wait(0.05)
    raise AssertionError("never happened")


def test_a_decision_after_the_run_ended_is_refused_with_how_to_continue(tmp_path):
    tree = load_gated(tmp_path)
    GATE.set()
    source = live_source(tree)
    with serving(source) as server:
        # A durable run that pauses on the held call: it ends, the call still waits.
        result = tree.run(store=tmp_path / "runs.db", run_id="r1", hold="pause", timeout=PATIENCE)
        assert result.run_status == "paused"
        held = [record.call_id for record in tree.pending_approvals()]
        assert len(held) == 1  # the guard still lists it (until the next run)
        assert httpx.get(server.url + "api/pending", headers=auth(server)).json() == {"pending": []}
        refused = decide(server, held[0])
        assert refused.status_code == 409
        assert refused.json()["error"] == (
            f"the run has ended (paused): continue with `jianmu resume r1 --approve {held[0]}` "
            "(or --deny)"
        )
        assert [record.call_id for record in tree.pending_approvals()] == held  # undecided
    tree.close()


def test_a_decision_is_applied_and_recorded_on_the_runs_own_thread(tmp_path):
    tree = load_gated(tmp_path)
    GATE.set()
    source = live_source(tree)
    seen: list[tuple[str, int, dict]] = []
    tree.events.subscribe(lambda e: seen.append((e.type, threading.get_ident(), e.data)))
    results: list = []
    with serving(source) as server:
        worker = threading.Thread(target=lambda: results.append(tree.run(timeout=PATIENCE)))
        worker.start()
        wait_until(lambda: tree.pending_approvals())
        call_id = tree.pending_approvals()[0].call_id
        assert decide(server, call_id).json() == {"call_id": call_id, "decision": "approved"}
        worker.join(PATIENCE)
    tree.close()
    assert results[0].status.name == "SUCCESS"
    run_thread = {ident for kind, ident, _ in seen if kind == "tree.tick"}
    assert len(run_thread) == 1 and worker.ident in run_thread
    decided = [(ident, data) for kind, ident, data in seen if kind == "approval.decided"]
    assert [ident for ident, _ in decided] == [worker.ident]
    kinds = [kind for kind, _, data in seen if data.get("call_id") == call_id]
    # In its place among the run's events: after the hold, before the approved call ran.
    assert kinds.index("approval.decided") < kinds.index("tool.call.completed")


def test_the_terminals_late_answer_is_reported_not_raised(tmp_path, monkeypatch):
    tree = load_gated(tmp_path)
    GATE.set()
    source = live_source(tree)
    asked, answered = threading.Event(), threading.Event()
    thread_errors: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: thread_errors.append(args.exc_value))

    def ask(prompt: str) -> str:  # the person at the terminal says no, after the page decided
        asked.set()
        answered.wait(PATIENCE)
        return "n"

    out = io.StringIO()
    tree.events.subscribe(ApprovalDesk(tree, "ask", ask=ask, out=out))
    results: list = []
    with serving(source) as server:
        worker = threading.Thread(target=lambda: results.append(tree.run(timeout=PATIENCE)))
        worker.start()
        assert asked.wait(PATIENCE)
        call_id = tree.pending_approvals()[0].call_id
        assert decide(server, call_id).status_code == 200
        answered.set()
        worker.join(PATIENCE)
        wait_until(lambda: "already decided in the viewer" in out.getvalue())
    record = tree.guard.approvals.get(call_id)
    tree.close()
    assert thread_errors == []
    assert results[0].status.name == "SUCCESS"
    assert record.status.name == "APPROVED" and record.note == "approved in the viewer"
    assert (
        out.getvalue()
        == f"{call_id}: already decided in the viewer; the terminal's answer is not used\n"
    )


def test_reading_needs_the_token_too(quickstart_trace):
    with serving(trace_source(quickstart_trace)) as server:
        url = server.url
        for path in ("api/tree", "api/events", "api/pending"):
            for wrong in ({}, {"X-Jianmu-Token": "wrong"}, {"X-Jianmu-Token": "ключ".encode()}):
                refused = httpx.get(url + path, headers=wrong)
                assert refused.status_code == 403, (path, wrong)
                assert "no valid token" in refused.json()["error"]
            for wrong in ("wrong", "ключ", ""):
                assert httpx.get(url + path, params={"token": wrong}).status_code == 403
            assert httpx.get(url + path, params={"token": server.token}).status_code == 200
            assert httpx.get(url + path, headers=auth(server)).status_code == 200
        # The page and its files carry no data: they load, then ask with the token.
        assert httpx.get(url).status_code == 200
        assert httpx.get(url + "static/viewer.js").status_code == 200
        # Actions take the header only; a non-ASCII token is a refusal, not a server error.
        body = {"call_id": "c", "decision": "approve"}
        for headers in ({"X-Jianmu-Token": "é".encode()}, {}):
            assert httpx.post(url + "api/decide", json=body, headers=headers).status_code == 403
        posted = httpx.post(url + "api/decide", json=body, params={"token": server.token})
        assert posted.status_code == 403


def test_a_failed_stop_does_not_hide_the_error_that_ended_the_block():
    source = Source("static", TreeView("t"))
    source.hub.finish()
    stops: list[str] = []

    def failing_stop(server: ViewerServer):
        real = server.stop

        def stop() -> None:
            real()
            stops.append("stopped")
            raise ViewerError("the viewer's server did not stop in time")

        return stop

    with pytest.raises(KeyError, match="the block's own"), ViewerServer(source) as server:
        server.stop = failing_stop(server)  # type: ignore[method-assign]
        raise KeyError("the block's own")
    # Nothing else failed: the stop's failure shows.
    with pytest.raises(ViewerError, match="did not stop"), ViewerServer(source) as server:
        server.stop = failing_stop(server)  # type: ignore[method-assign]
    assert stops == ["stopped", "stopped"]


def test_view_run_of_a_tree_that_no_longer_loads_shows_the_history(tmp_path):
    from jianmu_bt.loader import load_tree

    tree_file = tmp_path / "quick.yaml"
    tree_file.write_text((REPO / "trees" / "quickstart.yaml").read_text())
    with load_tree(tree_file) as tree:
        assert tree.run(store=tmp_path / "runs.db", run_id="r1").status.name == "SUCCESS"
    tree_file.write_text("version: 1\nroot: {sequence: {children: [{nope: 1}]}}\n")
    process = jianmu_process("view", "--run", "r1", "--store", "runs.db", cwd=tmp_path)
    out, err = Lines(process.stdout), Lines(process.stderr)
    try:
        assert "quick.yaml does not load now" in err.until("does not load now")
        url = re.search(r"http://127\.0\.0\.1:\d+/", out.until("jianmu viewer:")).group(0)
        token = {"X-Jianmu-Token": out.until("access token:").split()[2]}
        document = httpx.get(url + "api/tree", headers=token).json()
        assert document["mode"] == "replay" and document["nodes"] == []
        assert any("only its calls and state are shown" in p for p in document["problems"])
        with httpx.stream("GET", url + "api/events", headers=token) as response:
            assert "tool.call.completed" in response.read().decode()
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(30)
    assert code == 0, "".join(err.seen)
    assert "Traceback" not in "".join(err.seen)

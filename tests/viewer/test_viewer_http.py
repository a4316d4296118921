"""The viewer's HTTP side with a real uvicorn server on 127.0.0.1: who may talk to it, the token,
the event stream resuming by Last-Event-ID, bad traces, and the `jianmu view` / `run --view`
commands as real processes."""

from __future__ import annotations

import json
import re
import signal

import httpx
import pytest
from viewer_helpers import (
    GATE,
    Lines,
    auth,
    jianmu_process,
    load_gated,
    serving,
    viewer_threads,
)

from jianmu_bt.viewer import (
    Source,
    TreeView,
    ViewerServer,
    ViewerUnavailableError,
    live_source,
    static_source,
    trace_source,
)
from jianmu_bt.viewer.hub import EventHub
from jianmu_bt.viz.trace_status import TRACE_FORMAT

pytestmark = pytest.mark.timeout(90)


def sse_events(response: httpx.Response) -> list[tuple[int | None, str, str]]:
    """(id, event name, data) of each message of a finished event stream."""
    messages, current = [], {}
    for line in response.iter_lines():
        if not line:
            if "data" in current:
                messages.append(
                    (current.get("id"), current.get("event", "message"), current["data"])
                )
            current = {}
        elif not line.startswith(":"):
            field, _, value = line.partition(": ")
            current[field] = int(value) if field == "id" else value
    return messages


def test_foreign_host_and_origin_are_refused(tmp_path):
    with serving(static_source(load_gated(tmp_path))) as server:
        port = server.access.port
        token = auth(server)
        assert httpx.get(server.url + "api/tree", headers=token).status_code == 200
        assert httpx.get(f"http://localhost:{port}/api/tree", headers=token).status_code == 200
        rebound = httpx.get(
            server.url + "api/tree", headers={**token, "Host": f"evil.example:{port}"}
        )
        assert rebound.status_code == 403 and "answers only to" in rebound.text
        other_port = httpx.get(server.url, headers={"Host": f"127.0.0.1:{port + 1}"})
        assert other_port.status_code == 403
        cross = httpx.get(
            server.url + "api/tree", headers={**token, "Origin": "http://evil.example"}
        )
        assert cross.status_code == 403
        posted = httpx.post(
            server.url + "api/decide",
            headers={"Origin": "http://evil.example", "X-Jianmu-Token": server.token},
            json={"call_id": "x", "decision": "approve"},
        )
        assert posted.status_code == 403
        same = httpx.get(
            server.url + "api/tree", headers={**token, "Origin": f"http://127.0.0.1:{port}"}
        )
        assert same.status_code == 200
        page = httpx.get(server.url)
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["x-frame-options"] == "DENY"


def test_only_the_pages_own_files_are_served(tmp_path):
    with serving(static_source(load_gated(tmp_path))) as server:
        assert "EventSource" in httpx.get(server.url + "static/viewer.js").text
        assert "JianmuActions" in httpx.get(server.url + "static/actions.js").text
        for path in (
            "static/app.py",
            "static/../app.py",
            "static/%2e%2e%2fapp.py",
            "static/..%2f..%2fpyproject.toml",
            "gated.yaml",
            "etc/passwd",
        ):
            assert httpx.get(server.url + path).status_code == 404, path


def test_actions_need_the_token(tmp_path):
    tree = load_gated(tmp_path)
    source = live_source(tree)
    with serving(source) as server:
        decide = server.url + "api/decide"
        body = {"call_id": "call_x", "decision": "approve"}
        assert httpx.post(decide, json=body).status_code == 403
        assert httpx.post(decide, json=body, headers={"X-Jianmu-Token": "wrong"}).status_code == 403
        token = {"X-Jianmu-Token": server.token}
        assert httpx.post(decide, content=b"{", headers=token).status_code == 400
        bad = httpx.post(decide, json={"call_id": "c", "decision": "maybe"}, headers=token)
        assert bad.status_code == 400 and "approve" in bad.json()["error"]
        unknown = httpx.post(decide, json=body, headers=token)
        assert unknown.status_code == 409 and "call_x" in unknown.json()["error"]
    tree.close()


def test_the_stream_resumes_after_the_last_event_id(quickstart_trace):
    source = trace_source(quickstart_trace)
    total = len(source.hub)
    with serving(source) as server:
        with httpx.stream("GET", server.url + "api/events", headers=auth(server)) as response:
            everything = sse_events(response)
        with httpx.stream(
            "GET", server.url + "api/events", headers={**auth(server), "Last-Event-ID": "20"}
        ) as response:
            resumed = sse_events(response)
    ids = [number for number, name, _ in everything if name == "run"]
    assert ids == list(range(1, total + 1))
    assert [number for number, name, _ in resumed if name == "run"] == list(range(21, total + 1))
    assert resumed[-1][1] == "end"
    assert [data for _, _, data in resumed[:-1]] == [data for _, _, data in everything[20:-1]]


def test_a_live_stream_waits_for_new_events_and_a_reconnect_misses_none():
    hub = EventHub()
    source = Source("live", TreeView("t"), hub)
    with serving(source) as server:
        hub.publish({"type": "one"})
        received = []
        with httpx.stream(
            "GET", server.url + "api/events", headers=auth(server), timeout=10
        ) as response:
            lines = response.iter_lines()
            for line in lines:
                if line.startswith("data:"):
                    received.append(json.loads(line[5:])["type"])
                    if received == ["one"]:
                        hub.publish({"type": "two"})  # after the reader is waiting
                    else:
                        break
        hub.publish({"type": "three"})
        with httpx.stream(
            "GET",
            server.url + "api/events",
            headers={**auth(server), "Last-Event-ID": "2"},
            timeout=10,
        ) as response:
            for line in response.iter_lines():
                if line.startswith("id:"):
                    assert line == "id: 3"
                if line.startswith("data:"):
                    received.append(json.loads(line[5:])["type"])
                    break
    assert received == ["one", "two", "three"]


def test_a_truncated_trace_is_replayed_up_to_the_cut_with_a_warning(quickstart_trace, tmp_path):
    text = quickstart_trace.read_text()
    cut = tmp_path / "cut.jsonl"
    cut.write_text(text[: len(text) - 40])  # the last event loses its end
    source = trace_source(cut)
    complete = len(text.splitlines()) - 1
    assert len(source.hub) == complete
    assert any("truncated" in problem and "cut.jsonl" in problem for problem in source.problems)
    with serving(source) as server:
        document = httpx.get(server.url + "api/tree", headers=auth(server)).json()
    assert document["mode"] == "replay" and len(document["nodes"]) == 13
    assert any("truncated" in problem for problem in document["problems"])


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("hello world\n", ":1: not a JSON line (Expecting value): not a trace"),
        ('{"type": "tree.nodes", "nodes": [], "format": 99}\n', "trace format 99, newer than"),
        ("", "empty, not a trace"),
        (
            '{"type": "tree.tick"}\n[1, 2]\n{"type": "tree.tick"}\n',
            ":2: not an event (a JSON object with a 'type'): not a trace",
        ),
    ],
)
def test_a_file_that_cannot_be_replayed_says_why_on_the_page(tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    source = trace_source(path)
    assert len(source.hub) == 0
    with serving(source) as server:
        problems = httpx.get(server.url + "api/tree", headers=auth(server)).json()["problems"]
    assert any(message in problem and "bad.jsonl" in problem for problem in problems), problems


def test_the_trace_records_the_format_and_the_tree_shape(quickstart_trace):
    events = [json.loads(line) for line in quickstart_trace.read_text().splitlines()]
    assert events[0]["type"] == "tree.nodes" and events[0]["format"] == TRACE_FORMAT
    assert [node["parent"] for node in events[0]["nodes"][:4]] == [None, 0, 0, 0]
    writes = [event for event in events if event["type"] == "state.write"]
    assert writes[0]["initial"] and writes[0]["values"]["numbers"] == "2 + 3 * 4"
    assert {"keys": ["total"], "values": {"total": "14"}}.items() <= writes[1].items()


def test_jianmu_view_of_a_bad_trace_says_so_in_the_terminal_and_serves_the_page(tmp_path):
    bad = tmp_path / "notes.jsonl"
    bad.write_text("these are my notes\n")
    process = jianmu_process("view", "--trace", bad, cwd=tmp_path)
    out, err = Lines(process.stdout), Lines(process.stderr)
    try:
        problem = err.until("not a trace")
        assert "notes.jsonl:1" in problem
        url = re.search(r"http://127\.0\.0\.1:\d+/", out.until("jianmu viewer:")).group(0)
        token = {"X-Jianmu-Token": out.until("access token:").split()[2]}
        page = httpx.get(url + "api/tree", headers=token).json()
        assert any("not a trace" in p for p in page["problems"])
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(30)
    assert code == 1
    assert "Traceback" not in "".join(err.seen)


def test_jianmu_run_view_serves_the_run_and_stays_open_until_ctrl_c(tmp_path):
    from viewer_helpers import REPO

    process = jianmu_process(
        "run", REPO / "trees" / "quickstart.yaml", "--no-store", "--view", cwd=tmp_path
    )
    err = Lines(process.stderr)
    try:
        url = re.search(r"http://127\.0\.0\.1:\d+/", err.until("jianmu viewer:")).group(0)
        token = err.until("access token:").split()[2]
        err.until("the run ended")
        assert httpx.get(url + "api/tree").status_code == 403  # reading needs the token too
        assert httpx.get(url + "api/tree", params={"token": token}).json()["mode"] == "live"
        stream = url + f"api/events?token={token}"  # as the page's EventSource asks
        with httpx.stream("GET", stream, timeout=10) as response:
            kinds = []
            for line in response.iter_lines():
                if line.startswith("data:"):
                    kinds.append(json.loads(line[5:])["type"])
                    if kinds[-1] == "tree.finished":
                        break
        assert "node.status" in kinds and "state.write" in kinds and "llm.response" in kinds
        refused = httpx.post(url + "api/decide", json={"call_id": "c", "decision": "approve"})
        assert refused.status_code == 403 and token
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(30)
    summary = process.stdout.read()
    process.stdout.close()
    assert code == 0, "".join(err.seen)
    assert "finished: succeeded" in summary


def test_a_missing_extra_is_named(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a)
    )
    with pytest.raises(ViewerUnavailableError, match=r"jianmu-bt\[viewer\]"):
        ViewerServer(Source("static", TreeView("t")))


def test_a_live_run_held_call_is_decided_over_http(tmp_path):
    import threading

    tree = load_gated(tmp_path)
    source = live_source(tree)
    results = []
    with serving(source) as server:
        worker = threading.Thread(target=lambda: results.append(tree.run(timeout=30)))
        worker.start()
        GATE.set()
        pending = []
        for _ in range(300):
            pending = httpx.get(server.url + "api/pending", headers=auth(server)).json()["pending"]
            if pending:
                break
            threading.Event().wait(0.05)
        assert [call["tool"] for call in pending] == ["calculator"]
        answer = httpx.post(
            server.url + "api/decide",
            json={"call_id": pending[0]["call_id"], "decision": "approve"},
            headers={"X-Jianmu-Token": server.token},
        )
        assert answer.status_code == 200 and answer.json()["decision"] == "approved"
        worker.join(30)
        # Recorded like a decision at the terminal: in the guard's approvals, with the note.
        record = tree.guard.approvals.get(pending[0]["call_id"])
        assert record.status.name == "APPROVED" and record.note == "approved in the viewer"
    tree.close()
    assert results[0].status.name == "SUCCESS"
    assert viewer_threads() == []


def test_jianmu_view_run_replays_a_recorded_run(tmp_path, monkeypatch, capsys):
    from viewer_helpers import REPO

    from jianmu_bt.cli.app import main
    from jianmu_bt.loader import load_tree

    with load_tree(REPO / "trees" / "quickstart.yaml") as tree:
        assert tree.run(store=tmp_path / "runs.db", run_id="r1").status.name == "SUCCESS"
    monkeypatch.chdir(tmp_path)
    assert main(["view", "--run", "nope", "--store", "runs.db"]) == 1
    complaint = capsys.readouterr().err
    assert "nope" in complaint and "Traceback" not in complaint
    process = jianmu_process("view", "--run", "r1", "--store", "runs.db", cwd=tmp_path)
    out = Lines(process.stdout)
    try:
        url = re.search(r"http://127\.0\.0\.1:\d+/", out.until("jianmu viewer:")).group(0)
        token = {"X-Jianmu-Token": out.until("access token:").split()[2]}
        document = httpx.get(url + "api/tree", headers=token).json()
        assert document["mode"] == "replay" and len(document["nodes"]) == 13
        with httpx.stream("GET", url + "api/events", headers=token) as response:
            kinds = [name for _, name, _ in sse_events(response)]
        with httpx.stream("GET", url + "api/events", headers=token) as response:
            types = [
                json.loads(data).get("type")
                for _, name, data in sse_events(response)
                if name == "run"
            ]
        assert kinds[-1] == "end"
        assert types.count("checkpoint") >= 2 and "tool.call.completed" in types
        assert types[-1] == "tree.finished"
        assert document["can_fork"] is True
        fork = url + "api/fork"
        assert httpx.post(fork, json={"seq": 2}).status_code == 403
        assert httpx.post(fork, json={"seq": "two"}, headers=token).status_code == 400
        unknown = httpx.post(fork, json={"seq": 99}, headers=token)
        assert unknown.status_code == 409 and "99" in unknown.json()["error"]
        made = httpx.post(fork, json={"seq": 2}, headers=token).json()
        assert made["resume"] == f"jianmu resume {made['run_id']}"
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(30)
    process.stderr.close()
    assert code == 0
    from jianmu_bt.store import open_store

    with open_store(tmp_path / "runs.db", create=False) as store:
        forked = store.get_run(made["run_id"])
    assert (forked.parent_run, forked.parent_checkpoint) == ("r1", 2)
    resumed = jianmu_process("resume", made["run_id"], "--store", "runs.db", cwd=tmp_path)
    assert resumed.wait(60) == 0, resumed.stderr.read()
    resumed.stdout.close()
    resumed.stderr.close()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give a tree FILE, --trace TRACE.jsonl or --run ID"),
        (("--trace", "a.jsonl", "--run", "r1"), "give --trace or --run, not both"),
        (("missing.yaml",), "missing.yaml: no such tree file"),
        (("--store", "x.db", "t.yaml"), "--store goes with --run ID"),
        (("--trace", "t.jsonl", "--port", "70000"), "--port 70000: give a port from 1 to 65535"),
    ],
)
def test_jianmu_view_mistakes_are_one_clear_line(tmp_path, monkeypatch, capsys, args, message):
    from jianmu_bt.cli.app import main

    (tmp_path / "t.jsonl").write_text('{"type": "tree.tick"}\n')
    monkeypatch.chdir(tmp_path)
    assert main(["view", *args]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err, err
    assert viewer_threads() == []

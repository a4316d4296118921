"""The viewer in a real browser: headless Chromium (the system's) driven by Playwright
(`browser_support`: skipped without them, unless JIANMU_REQUIRE_BROWSER=1).

One browser for the module. Checked: the statuses a live run shows at the moments the test
controls (a tool waits on a gate the test opens), a replay matching its trace event by event,
approve/deny from the page (refused without the token), a page without the token (shows nothing
until given it), held calls gone once the run ended, collapse/expand and the node panel, a durable
run's replay and fork. The speed of a big tree: test_viewer_browser_speed.py.
"""

from __future__ import annotations

import json
import threading

import pytest
from browser_support import WAIT_MS, forget_token, open_viewer, status, wait_status
from viewer_helpers import GATE, PATIENCE, REPO, load_gated, serving

from jianmu_bt.viewer import Source, live_source, trace_source
from jianmu_bt.viewer.tree_view import view_of_tree

pytestmark = pytest.mark.timeout(120)


def start_run(tree) -> tuple[threading.Thread, list]:
    results: list = []
    worker = threading.Thread(target=lambda: results.append(tree.run(timeout=PATIENCE)))
    worker.start()
    return worker, results


def test_a_live_run_shows_each_status_when_it_happens_and_takes_an_approval(page, tmp_path):
    tree = load_gated(tmp_path)
    source = live_source(tree)
    with serving(source) as server:
        open_viewer(page, server)
        assert status(page, "Wait") == "INVALID"
        worker, results = start_run(tree)
        try:
            wait_status(page, "Wait", "RUNNING")
            assert status(page, "Main") == "RUNNING" and status(page, "Compute") == "INVALID"
            GATE.set()
            wait_status(page, "Wait", "SUCCESS")
            page.wait_for_selector("#held-list .call", timeout=WAIT_MS)
            assert 'calculator {"expression":"6 * 7"}' in page.inner_text("#held-list")
            forget_token(page)
            page.click("#held-list .approve")  # no token: refused
            page.wait_for_function(
                "document.getElementById('decision-error').textContent.startsWith('403')",
                timeout=WAIT_MS,
            )
            assert status(page, "Compute") == "RUNNING" and tree.pending_approvals()
            page.fill("#token", server.token)
            page.click("#held-list .approve")
            wait_status(page, "Compute", "SUCCESS")
            wait_status(page, "Main", "SUCCESS")
            page.wait_for_function("window.jianmuViewer.state.second === '42'", timeout=WAIT_MS)
            assert page.is_hidden("#held")
        finally:
            GATE.set()
            worker.join(PATIENCE)
    tree.close()
    assert results[0].status.name == "SUCCESS"


def test_deny_from_the_page_fails_the_step_with_the_reason(page, tmp_path):
    tree = load_gated(tmp_path)
    GATE.set()
    source = live_source(tree)
    with serving(source) as server:
        open_viewer(page, server)  # the token from the printed URL
        worker, results = start_run(tree)
        try:
            page.wait_for_selector("#held-list .call", timeout=WAIT_MS)
            page.fill("#held-list .reason", "not today")
            page.click("#held-list .deny")
            wait_status(page, "Compute", "FAILURE")
            wait_status(page, "Main", "FAILURE")
        finally:
            worker.join(PATIENCE)
        events = [json.loads(line) for _, line in source.hub.after(0)]
    tree.close()
    assert results[0].status.name == "FAILURE"
    decided = [e for e in events if e["type"] == "approval.decided"]
    assert [(e["decision"], e["by"], e["reason"]) for e in decided] == [
        ("denied", "viewer", "not today")
    ]


def test_held_calls_leave_the_page_once_the_run_has_ended(page, tmp_path):
    tree = load_gated(tmp_path)
    GATE.set()
    source = live_source(tree)
    with serving(source) as server:
        open_viewer(page, server)
        results: list = []
        # A durable run that pauses on its held call: it ends with the call still waiting.
        worker = threading.Thread(
            target=lambda: results.append(
                tree.run(store=tmp_path / "runs.db", run_id="r1", hold="pause", timeout=PATIENCE)
            )
        )
        worker.start()
        worker.join(PATIENCE)
        page.wait_for_function(
            "window.jianmuViewer.events.some((e) => e.type === 'tree.finished')", timeout=WAIT_MS
        )
        assert tree.pending_approvals()  # the guard still lists it; the page offers nothing
        assert page.is_hidden("#held") and page.locator("#held-list .approve").count() == 0
    tree.close()
    assert results[0].run_status == "paused"


def test_a_page_without_the_token_shows_nothing_until_given_it(page, quickstart_trace):
    with serving(trace_source(quickstart_trace)) as server:
        page.goto(server.url)  # no #token=
        page.wait_for_selector("#problems:not([hidden])", timeout=WAIT_MS)
        assert "no valid token" in page.inner_text("#problems")
        assert page.locator("g.node").count() == 0
        page.fill("#token", server.token)
        page.dispatch_event("#token", "change")
        page.wait_for_function("window.jianmuViewer.ready", timeout=WAIT_MS)
        page.wait_for_selector("g.node[data-name='Answered'][data-status='SUCCESS']")
        assert page.is_hidden("#problems")


def statuses_at(events: list[dict], count: int) -> dict[str, str]:
    """The last status of each node name after the first `count` events."""
    seen: dict[str, str] = {}
    for event in events[:count]:
        if event["type"] == "node.status":
            seen[event["node"]] = event["new"]
    return seen


def state_at(events: list[dict], count: int) -> dict:
    state: dict = {}
    for event in events[:count]:
        if event["type"] == "state.write":
            if event.get("initial"):
                state = {}
            state.update(event["values"])
    return state


def test_a_replay_matches_the_trace_at_every_step(page, quickstart_trace):
    trace = quickstart_trace
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    source = trace_source(trace)
    with serving(source) as server:
        open_viewer(page, server)
        page.wait_for_function("window.jianmuViewer.ended", timeout=WAIT_MS)
        assert page.evaluate("window.jianmuViewer.events.length") == len(events)
        names = page.evaluate("window.jianmuViewer.tree.nodes.map(n => n.name)")
        for count in range(len(events) + 1):
            shown, state = page.evaluate(
                """([names, count]) => { const v = window.jianmuViewer; v.moveTo(count);
                return [names.map((n) => v.statusOf(n)), v.state]; }""",
                [names, count],
            )
            expected = statuses_at(events, count)
            assert shown == [expected.get(name, "INVALID") for name in names], count
            assert state == state_at(events, count), count
        # The drawing shows the scrubbed moment too: after the guard's denial, before the agent.
        denial = next(
            i + 1
            for i, e in enumerate(events)
            if e["type"] == "node.status" and e["node"] == "SaveTotal" and e["new"] == "FAILURE"
        )
        page.evaluate(f"window.jianmuViewer.moveTo({denial})")
        page.wait_for_function(
            f"document.getElementById('position').textContent.startsWith('event {denial} ')"
        )
        assert status(page, "SaveTotal") == "FAILURE" and status(page, "Solver") == "INVALID"
        # The node panel: the YAML source is not in a trace alone; calls up to the cursor are.
        page.click("g.node[data-name='Sum']")
        assert "calculator -> 14" in page.inner_text("#node-panel")


def test_node_panel_and_collapse(page, tmp_path):
    from jianmu_bt.loader import load_tree

    tree = load_tree(REPO / "trees" / "quickstart.yaml")
    source = live_source(tree)
    with serving(source) as server:
        open_viewer(page, server)
        page.click("g.node[data-name='Sum']")
        panel = page.inner_text("#node-panel")
        assert "quickstart.yaml:" in panel and "tool: calculator" in panel
        assert page.inner_text("dd[data-field='reads']") == "numbers"
        assert page.inner_text("dd[data-field='writes']") == "total"
        assert "expression:" in page.inner_text("#node-panel pre.source")
        page.dblclick("g.node[data-name='Solver']")
        assert page.is_hidden("g.node[data-name='Solver.llm']")
        assert page.is_visible("g.node[data-name='Solver']")
        page.dblclick("g.node[data-name='Solver']")
        assert page.is_visible("g.node[data-name='Solver.llm']")
    tree.close()


def test_a_dropped_stream_is_resumed_from_the_last_event_id(page, quickstart_trace):
    """The first stream is cut after 10 events; the page reconnects by itself, after the last
    event it has, and the server sends the rest: every event once, in order."""
    source = trace_source(quickstart_trace)
    total = len(source.hub)
    first_ten = "retry: 50\n\n" + "".join(
        f"id: {number}\nevent: run\ndata: {line}\n\n" for number, line in source.hub.after(0)[:10]
    )
    asked: list[str | None] = []

    def cut_first_stream(route) -> None:
        asked.append(route.request.url.rsplit("/", 1)[1])
        if len(asked) == 1:  # the connection ends after 10 events, without `end`
            route.fulfill(status=200, content_type="text/event-stream", body=first_ten)
        else:
            route.continue_()

    page.route("**/api/events*", cut_first_stream)
    with serving(source) as server:
        open_viewer(page, server)
        page.wait_for_function("window.jianmuViewer.ended", timeout=WAIT_MS)
        received = page.evaluate("window.jianmuViewer.events")
    assert [url.split("&")[0] for url in asked[:2]] == ["events?after=0", "events?after=10"]
    assert all(url.endswith(f"&token={server.token}") for url in asked)
    assert received == [json.loads(line) for _, line in source.hub.after(0)]
    assert len(received) == total


def test_the_page_works_under_its_own_security_policy(browser, quickstart_trace):
    context = browser.new_context()  # the policy enforced (no test helper may evaluate strings)
    strict = context.new_page()
    messages: list[str] = []
    strict.on("console", lambda message: messages.append(message.text))
    strict.on("pageerror", lambda exc: messages.append(str(exc)))
    with serving(trace_source(quickstart_trace)) as server:
        strict.goto(f"{server.url}#token={server.token}")
        strict.wait_for_selector("g.node[data-name='Answered'][data-status='SUCCESS']")
        strict.click("g.node[data-name='Sum']")
        assert "calculator -> 14" in strict.inner_text("#node-panel")
    context.close()
    assert messages == []


def test_node_names_are_shown_as_text_never_run_as_code(page):
    import py_trees

    hostile = '<img src=x onerror="window.hacked=1">'
    root = py_trees.composites.Sequence("<script>window.hacked=1</script>", memory=True)
    root.add_child(py_trees.behaviours.Success(hostile))
    dialogs: list = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    for graphviz in (True, False):
        source = Source("static", view_of_tree(root, title="x", use_graphviz=graphviz))
        source.hub.finish()
        with serving(source) as server:
            open_viewer(page, server)
            page.click("g.node >> nth=1")
            assert hostile in page.inner_text("#node-panel")
            assert page.evaluate("window.hacked") is None
    assert dialogs == []


def test_a_durable_run_is_replayed_from_its_checkpoints(page, tmp_path):
    from jianmu_bt.loader import load_tree
    from jianmu_bt.store import open_store
    from jianmu_bt.viewer import history_source
    from jianmu_bt.viewer.forking import forker

    store = open_store(tmp_path / "runs.db", create=True)
    with load_tree(REPO / "trees" / "quickstart.yaml") as first:
        # In a thread: Playwright's sync API keeps an event loop running in this one.
        results: list = []
        worker = threading.Thread(
            target=lambda: results.append(first.run(timeout=PATIENCE, store=store, run_id="r1"))
        )
        worker.start()
        worker.join(PATIENCE)
    store.close()
    assert results[0].status.name == "SUCCESS"
    store = open_store(tmp_path / "runs.db", create=False)
    tree = load_tree(REPO / "trees" / "quickstart.yaml")
    try:
        source = history_source(store, "r1", tree, fork=forker(tmp_path / "runs.db", "r1"))
        checkpoints = store.history("r1")
    finally:
        store.close()
    with serving(source) as server:
        open_viewer(page, server)
        page.wait_for_function("window.jianmuViewer.ended", timeout=WAIT_MS)
        wait_status(page, "Quickstart", "SUCCESS")
        assert status(page, "SaveTotal") == "FAILURE" and status(page, "Solver.llm") == "SUCCESS"
        assert page.evaluate("window.jianmuViewer.state.total") == "14"
        # Back to the first checkpoint: nothing has run yet, the state is the initial one.
        first = page.evaluate(
            "window.jianmuViewer.events.findIndex(e => e.type === 'checkpoint') + 1"
        )
        page.evaluate(f"window.jianmuViewer.moveTo({first})")
        assert page.evaluate("window.jianmuViewer.statusOf('Sum')") == "INVALID"
        assert page.evaluate("window.jianmuViewer.state") == checkpoints[0].data["state"]
        # Fork from that checkpoint: refused without the token, then a new run in the store.
        page.wait_for_function(  # the button's label follows the step (drawn on the next frame)
            "document.querySelector('#fork').innerText === 'fork from checkpoint 1'",
            timeout=WAIT_MS,
        )
        forget_token(page)
        page.click("#fork")
        page.wait_for_function(
            "document.getElementById('fork-result').textContent.startsWith('403')",
            timeout=WAIT_MS,
        )
        page.fill("#token", server.token)
        page.click("#fork")
        page.wait_for_function(
            "document.getElementById('fork-result').textContent.startsWith('forked as')",
            timeout=WAIT_MS,
        )
        new_id = page.inner_text("#fork-result").split()[2].rstrip(":")
    tree.close()
    with open_store(tmp_path / "runs.db", create=False) as store:
        forked = store.get_run(new_id)
    assert (forked.parent_run, forked.parent_checkpoint, forked.status) == ("r1", 1, "paused")

"""The viewer in a real browser: headless Chromium (the system's) driven by Playwright.

One browser for the module. Checked: the statuses a live run shows at the moments the test
controls (a tool waits on a gate the test opens), a replay matching its trace event by event,
approve/deny from the page (refused without the token), collapse/expand and the node panel, and
the frame time of a 1,000-node tree (printed, not asserted).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import threading

import pytest
from py_trees.common import Status
from viewer_helpers import GATE, PATIENCE, REPO, load_gated, serving

from jianmu_bt.viewer import Source, live_source, trace_source
from jianmu_bt.viewer.tree_view import view_of_tree
from jianmu_bt.viz.dot import STATUS_COLOURS

CHROMIUM = os.environ.get("JIANMU_CHROMIUM", "/usr/bin/chromium")
playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
if not shutil.which(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)

pytestmark = pytest.mark.timeout(120)
WAIT_MS = PATIENCE * 1000


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser):
    # bypass_csp: Playwright's wait_for_function evaluates strings, which the page's policy
    # forbids; the page's own rendering is then checked without the policy's help.
    context = browser.new_context(viewport={"width": 1400, "height": 820}, bypass_csp=True)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    yield opened
    context.close()
    assert errors == []


def status(page, name: str) -> str | None:
    return page.get_attribute(f"g.node[data-name='{name}']", "data-status")


def wait_status(page, name: str, wanted: str) -> None:
    """Wait until the node shows `wanted`, and check it is drawn in that status's colour."""
    page.wait_for_selector(f"g.node[data-name='{name}'][data-status='{wanted}']", timeout=WAIT_MS)
    fill = page.get_attribute(
        f"g.node[data-name='{name}'] :is(polygon, ellipse, path, rect) >> nth=0", "fill"
    )
    assert fill == STATUS_COLOURS[Status(wanted)], (name, wanted, fill)


def open_viewer(page, server, token: str | None = None) -> None:
    page.goto(server.url + (f"#token={token}" if token else ""))
    page.wait_for_function("window.jianmuViewer && window.jianmuViewer.ready", timeout=WAIT_MS)


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
            page.click("#held-list .approve")  # no token typed: refused
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
        open_viewer(page, server, token=server.token)  # the token from the printed URL
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
    assert asked[:2] == ["events?after=0", "events?after=10"]
    assert received == [json.loads(line) for _, line in source.hub.after(0)]
    assert len(received) == total


def test_the_page_works_under_its_own_security_policy(browser, quickstart_trace):
    context = browser.new_context()  # the policy enforced (no test helper may evaluate strings)
    strict = context.new_page()
    messages: list[str] = []
    strict.on("console", lambda message: messages.append(message.text))
    strict.on("pageerror", lambda exc: messages.append(str(exc)))
    with serving(trace_source(quickstart_trace)) as server:
        strict.goto(server.url)
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


def big_tree(leaves_per: int = 9, fan: int = 10):
    """A tree of 1 + 10 + 100 + 900 = 1,011 nodes (sequences over simple behaviours)."""
    import py_trees

    root = py_trees.composites.Sequence("root", memory=True)
    for a in range(fan):
        middle = py_trees.composites.Sequence(f"s{a}", memory=True)
        root.add_child(middle)
        for b in range(fan):
            inner = py_trees.composites.Sequence(f"s{a}.{b}", memory=True)
            middle.add_child(inner)
            for c in range(leaves_per):
                inner.add_child(py_trees.behaviours.Success(f"leaf{a}.{b}.{c}"))
    return root


@pytest.mark.parametrize("graphviz", [True, False], ids=["graphviz", "browser-layout"])
def test_frame_time_on_a_1000_node_tree_is_measured(page, graphviz):
    from py_trees.common import Status

    from jianmu_bt.viz.traversal import walk

    root = big_tree()
    nodes = list(walk(root))
    view = view_of_tree(root, title="big", use_graphviz=graphviz)
    source = Source("live", view)
    with serving(source) as server:
        open_viewer(page, server)
        page.evaluate(
            """() => { const v = window.jianmuViewer; v.frames = []; let last = performance.now();
            const tick = (now) => { v.frames.push(now - last); last = now;
              if (v.frames.length < 100000) requestAnimationFrame(tick); };
            requestAnimationFrame(tick); }"""
        )
        rounds = 3
        for _ in range(rounds):  # every node RUNNING, then SUCCESS: ~6,000 events
            for node in nodes:
                source.hub.publish(
                    {
                        "type": "node.status",
                        "node": node.name,
                        "id": str(node.id),
                        "old": "INVALID",
                        "new": Status.RUNNING.value,
                    }
                )
            for node in nodes:
                source.hub.publish(
                    {
                        "type": "node.status",
                        "node": node.name,
                        "id": str(node.id),
                        "old": "RUNNING",
                        "new": Status.SUCCESS.value,
                    }
                )
        total = rounds * 2 * len(nodes)
        page.wait_for_function(
            f"window.jianmuViewer.events.length === {total}", timeout=WAIT_MS * 2
        )
        page.wait_for_function("window.jianmuViewer.dirty.size === 0", timeout=WAIT_MS)
        frames = page.evaluate("window.jianmuViewer.frames.slice(1)")
        assert status(page, "leaf9.9.8") == "SUCCESS"
        assert page.locator("g.node").count() >= len(nodes)
    frames.sort()
    p95 = frames[int(len(frames) * 0.95) - 1] if frames else float("nan")
    print(
        f"\nviewer frame time, {len(nodes)} nodes, {total} status events, "
        f"{'Graphviz' if graphviz else 'browser'} layout: {len(frames)} frames, "
        f"median {statistics.median(frames):.1f} ms, p95 {p95:.1f} ms, max {frames[-1]:.1f} ms"
    )


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
        assert page.inner_text("#fork") == "fork from checkpoint 1"
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

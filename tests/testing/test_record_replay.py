"""Record and replay: a real run (a real HTTP server on 127.0.0.1) traced, turned into an
overlay, and replayed offline with the server gone; a replay that strays fails clearly."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from overlay_helpers import EXAMPLES

from jianmu_bt.testing import (
    Overlay,
    ReplayDivergedError,
    Trace,
    load_overlay,
    open_tree,
    overlay_from_data,
    record_overlay,
    run_tree,
    write_overlay,
)
from jianmu_bt.tools import tool
from jianmu_bt.tools.builtin.http import HTTPRequestTool

PAGES = {
    "/": "<h1>Example Domain</h1><p>For documentation examples.</p>",
    "/about": "<p>Maintained by IANA.</p>",
}


class _Pages(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.server.hits.append(self.path)  # type: ignore[attr-defined]
        body = PAGES.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write((body or "not found").encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[ThreadingHTTPServer]:
    """A real web server on 127.0.0.1 serving PAGES (stopped after the test)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    server.hits = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def local_http() -> HTTPRequestTool:
    """http_request allowed to reach the test server (the default refuses loopback)."""
    return HTTPRequestTool(allowed_networks=["127.0.0.1/32"])


def test_a_recorded_run_replays_offline(site: ThreadingHTTPServer, tmp_path: Path):
    base = f"http://127.0.0.1:{site.server_address[1]}"
    ask_about = {"tool_calls": [{"name": "http_request", "arguments": {"url": f"{base}/about"}}]}
    model = Overlay(llm=[ask_about, "Example Domain, maintained by IANA."])
    tree = open_tree(EXAMPLES / "research.yaml", model, tools=[local_http()])
    try:
        real = run_tree(tree, {"url": f"{base}/"})
    finally:
        tree.close()
    assert real.succeeded, real.reason
    assert site.hits == ["/", "/about"]  # the real run really went to the server

    trace_file = tmp_path / "run.jsonl"
    trace_file.write_text(
        "\n".join(json.dumps(e, default=str) for e in real.trace.events),
        encoding="utf-8",
    )
    data = record_overlay(Trace.from_file(trace_file))
    assert [c["arguments"]["url"] for c in data["tools"]["http_request"]["calls"]] == [
        f"{base}/",
        f"{base}/about",
    ]
    assert len(data["llm"]["replies"]) == 2
    replay_file = write_overlay(data, tmp_path / "replay.yaml", source="run.jsonl")

    site.shutdown()  # offline from here on: the replay must not need the server
    site.server_close()
    tree = open_tree(EXAMPLES / "research.yaml", replay_file, tools=[local_http()])
    try:
        replay = run_tree(tree, {"url": f"{base}/"})
    finally:
        tree.close()
    assert replay.succeeded, replay.reason
    assert replay.state["page"] == real.state["page"]
    assert replay.state["summary"] == real.state["summary"]
    assert [(c.node, c.arguments, c.output) for c in replay.calls()] == [
        (c.node, c.arguments, c.output) for c in real.calls()
    ]
    assert replay.nodes_ran() == real.nodes_ran()
    assert site.hits == ["/", "/about"]


def test_a_replay_that_strays_fails_naming_the_call_and_the_recording(tmp_path: Path):
    overlay_file = EXAMPLES / "research.overlay.yaml"
    tree = open_tree(EXAMPLES / "research.yaml", overlay_file)
    try:
        with pytest.raises(ReplayDivergedError) as caught:
            run_tree(tree, {"url": "https://example.org/other"})
    finally:
        tree.close()
    assert str(caught.value) == (
        "the run made calls its recording did not have:\n  replay diverged: call 1 of "
        '\'http_request\' with arguments {"url": "https://example.org/other"} is not in the '
        "recording; the unused recorded call(s) of 'http_request' have arguments: "
        '{"url": "https://example.org/"}; {"url": "https://example.org/about"}'
    )
    # Without strict, the run is returned: the call failed, the tree stopped there.
    tree = open_tree(EXAMPLES / "research.yaml", load_overlay(overlay_file))
    try:
        run = run_tree(tree, {"url": "https://example.org/other"}, strict=False)
    finally:
        tree.close()
    assert not run.succeeded and "replay diverged" in run.reason
    assert run.overlay is not None and len(run.overlay.divergences) == 1


def test_retried_attempts_are_recorded_and_replayed_in_turn(tmp_path: Path):
    attempts = []

    @tool(name="flaky")
    def flaky(n: int) -> str:
        """Fails twice, then answers."""
        attempts.append(n)
        if len(attempts) < 3:
            raise ConnectionError(f"attempt {len(attempts)} failed")
        return f"ok {n}"

    path = tmp_path / "retry.yaml"
    path.write_text(
        "version: 1\nstate: {out: {type: string}}\n"
        "root:\n  tool: {name: Step, tool: flaky, arguments: {n: 3}, output: out,"
        " max_retries: 2, retry_backoff: 0}\n",
        encoding="utf-8",
    )
    tree = open_tree(path, tools=[flaky])
    try:
        real = run_tree(tree)
    finally:
        tree.close()
    assert real.state["out"] == "ok 3" and len(attempts) == 3
    data = record_overlay(real.trace)
    assert data["tools"]["flaky"]["calls"] == [
        {"arguments": {"n": 3}, "error": "Error: ConnectionError: attempt 1 failed"},
        {"arguments": {"n": 3}, "error": "Error: ConnectionError: attempt 2 failed"},
        {"arguments": {"n": 3}, "result": "ok 3"},
    ]
    overlay = overlay_from_data(data)  # the data, as the file would give it
    tree = open_tree(path, overlay, tools=[flaky])
    try:
        replay = run_tree(tree)
    finally:
        tree.close()
    assert replay.state["out"] == "ok 3" and len(attempts) == 3  # the function never ran again
    assert replay.calls()[0].attempts == 3
    assert overlay.unused() == []

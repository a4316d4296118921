"""A held call decided elsewhere than at the terminal (the viewer's page, another thread) is
announced once: one `guard.decision` event, one activity line, however often the approval
store changes while it waits."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from cli_helpers import REPO

from jianmu_bt.cli.activity import ActivityLog
from jianmu_bt.loader import load_tree

pytestmark = pytest.mark.timeout(120)

#: A hang guard for a step that takes well under a second (never a bound on its time).
PATIENCE = 60

HELD_TREE = """\
version: 1
name: held
state:
  total: {type: string}
tools: [calculator]
guard: {approve: [calculator]}
root:
  tool: {name: Sum, tool: calculator, output: total, arguments: {expression: "2 + 3"}}
"""
HELD_LINE = "Sum: guard says pending to calculator"


def test_a_call_approved_from_another_thread_is_announced_once(tmp_path: Path) -> None:
    path = tmp_path / "held.yaml"
    path.write_text(HELD_TREE)
    with load_tree(path) as tree:
        activity = ActivityLog()
        tree.events.subscribe(activity)
        held = threading.Event()
        pending: list[str] = []

        def on_event(event) -> None:
            if event.type == "guard.decision" and event.data.get("decision") == "pending":
                pending.append(event.data["call_id"])
                held.set()

        tree.events.subscribe(on_event)
        results: list = []
        worker = threading.Thread(target=lambda: results.append(tree.run(timeout=PATIENCE)))
        worker.start()
        assert held.wait(PATIENCE)
        # The call's pending record, then its approval, each change the approval store and
        # wake the waiting node: neither announces the hold again.
        (record,) = tree.pending_approvals()
        tree.approve(record.call_id, note="approved from another thread")
        worker.join(PATIENCE)
    assert results and results[0].ok, results
    assert pending == [record.call_id]
    assert [line for line in activity.lines if HELD_LINE in line] == [
        f"{HELD_LINE}: calculator runs only after a reviewer approves the call"
    ]


def test_run_view_lists_a_call_approved_on_the_page_once(tmp_path: Path) -> None:
    (tmp_path / "held.yaml").write_text(HELD_TREE)
    env = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "dumb", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "jianmu_bt.cli", "run", "held.yaml", "--view", "--no-store"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stderr.readline()
        found = re.search(r"(http://127\.0\.0\.1:\d+/)#token=(\S+)", line)
        assert found, line
        url, headers = found.group(1), {"X-Jianmu-Token": found.group(2)}
        waited = threading.Event()
        for _ in range(PATIENCE * 10):
            calls = httpx.get(url + "api/pending", headers=headers, timeout=30).json()["pending"]
            if calls:
                break
            waited.wait(0.1)
        body = {"call_id": calls[0]["call_id"], "decision": "approve"}
        assert httpx.post(url + "api/decide", json=body, headers=headers, timeout=30).is_success
        while "the run ended" not in line:
            line = process.stderr.readline()
            assert line, "the run never ended"
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=PATIENCE)
    assert process.returncode == 0, err
    assert out.startswith("Run of 'held' finished: succeeded (not recorded)\n"), out
    assert out.count(HELD_LINE) == 1, out

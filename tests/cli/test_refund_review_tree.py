"""trees/refund_review.yaml end to end: a person chooses how to refund, a reviewer approves the
agent's refund with a smaller amount, and the payment provider's result comes from outside.
The run finishes correctly driven from the CLI, from Python and from the viewer, each step in
a process of its own (the viewer's run is killed with -9 halfway and resumed)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from jianmu_bt.store import open_store

REPO = Path(__file__).resolve().parents[2]
TREE = REPO / "trees" / "refund_review.yaml"
sys.path.insert(0, str(REPO / "tests" / "viewer"))
from viewer_helpers import Lines, jianmu_process  # noqa: E402

EDITED = {"order": "A-1001", "amount": 50, "method": "card"}
PAID = {"status": "paid", "reference": "rf_1"}


def jianmu(*args: Any, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "dumb"}
    return subprocess.run(
        [sys.executable, "-m", "jianmu_bt.cli", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def waiting(db: Path) -> list[Any]:
    with open_store(db, create=False) as store:
        return [e for e in store.journal("R") if e.status in ("waiting", "held")]


def finished(db: Path) -> tuple[str, dict[str, Any]]:
    with open_store(db, create=False) as store:
        run = store.get_run("R")
        state = store.latest_checkpoint("R").data["state"]
    return run.status, state


def check_finished(db: Path) -> None:
    status, state = finished(db)
    assert status == "succeeded"
    assert state["method"] == "card"
    assert state["answer"].startswith("The refund of order A-1001 is done")
    with open_store(db, create=False) as store:
        log = store.journal_log("R")
    approved = next(e for e in log if e.status == "approved")
    assert approved.result["arguments"] == EDITED
    handed_out = next(e for e in log if e.status == "waiting" and e.tool == "issue_refund")
    assert handed_out.result["arguments"] == EDITED  # the provider got the reviewed amount
    done = [e.result for e in log if e.status == "done" and e.tool in ("ask", "issue_refund")]
    assert [d["output"] for d in done] == ["card", PAID]


def test_from_the_cli_across_processes(tmp_path):
    db = tmp_path / "runs.db"
    started = jianmu(
        "run", TREE, "--store", db, "--run-id", "R", "--approve", "later", cwd=tmp_path
    )
    assert started.returncode == 3, started.stdout + started.stderr
    (question,) = waiting(db)
    assert f"--answer {question.call_id}=" in started.stdout

    answered = jianmu(
        "resume", "R", "--store", db, "--answer", f"{question.call_id}=card", cwd=tmp_path
    )
    assert answered.returncode == 3, answered.stdout + answered.stderr
    (held,) = waiting(db)
    assert (held.tool, held.status, held.arguments["amount"]) == ("issue_refund", "held", 5000)

    too_much = json.dumps({**EDITED, "amount": 5000})
    refused = jianmu(
        "resume", "R", "--store", db, "--edit", f"{held.call_id}={too_much}", cwd=tmp_path
    )
    assert refused.returncode == 1
    assert "5000 is greater than the maximum of 1000" in refused.stderr

    edited = jianmu(
        "resume", "R", "--store", db, "--edit", f"{held.call_id}={json.dumps(EDITED)}", cwd=tmp_path
    )
    assert edited.returncode == 3, edited.stdout + edited.stderr
    (call,) = waiting(db)
    assert (call.tool, call.status) == ("issue_refund", "waiting")
    assert '"amount": 50' in edited.stdout and '"amount": 5000' not in edited.stdout

    (tmp_path / "paid.json").write_text(json.dumps(PAID))
    paid = jianmu(
        "resume", "R", "--store", db, "--result", f"{call.call_id}=@paid.json", cwd=tmp_path
    )
    assert paid.returncode == 0, paid.stdout + paid.stderr
    check_finished(db)


STEP = """
import json, sys
from jianmu_bt import load_tree
decisions = json.loads(sys.argv[3])
with load_tree(sys.argv[1]) as tree:
    if decisions is None:
        result = tree.run(store=sys.argv[2], run_id="R", hold="pause")
    else:
        result = tree.resume("R", store=sys.argv[2], hold="pause", by="py", **decisions)
print(result.run_status)
"""


def test_from_python_across_processes(tmp_path):
    db = tmp_path / "runs.db"

    def step(decisions: dict[str, Any] | None) -> str:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        done = subprocess.run(
            [sys.executable, "-c", STEP, str(TREE), str(db), json.dumps(decisions)],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert step(None) == "paused"
    (question,) = waiting(db)
    assert step({"answers": {question.call_id: "card"}}) == "paused"
    (held,) = waiting(db)
    assert step({"edits": {held.call_id: EDITED}}) == "paused"
    (call,) = waiting(db)
    assert step({"results": {call.call_id: PAID}}) == "succeeded"
    check_finished(db)


class Page:
    """The viewer of one `jianmu run|resume --view` process, as the page talks to it."""

    def __init__(self, *args: Any, cwd: Path) -> None:
        self.process = jianmu_process(*args, "--view", cwd=cwd)
        self.err = Lines(self.process.stderr)
        self.url = re.search(r"http://127\.0\.0\.1:\d+/", self.err.until("jianmu viewer:"))[0]
        self.token = {"X-Jianmu-Token": self.err.until("access token:").split()[2]}

    def get(self, path: str) -> Any:
        return httpx.get(self.url + path, headers=self.token, timeout=30).json()

    def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.post(self.url + path, json=body, headers=self.token, timeout=30)

    def first(self, path: str, key: str | None = None) -> dict[str, Any]:
        """The first item the page lists at `path` (under `key`), once there is one."""
        for _ in range(600):
            found = self.get(path)
            items = found[key] if key else found
            if items:
                return items[0]
            assert self.process.poll() is None, "".join(self.err.seen)
            time.sleep(0.1)
        raise AssertionError(f"nothing at {path}")


def test_from_the_viewer_across_a_kill_and_a_resume(tmp_path):
    db = tmp_path / "runs.db"
    first = Page("run", TREE, "--store", db, "--run-id", "R", cwd=tmp_path)
    try:
        question = first.first("api/waiting", "questions")
        assert question["message"] == "How should order A-1001 be refunded?"
        body = {"question_id": question["question_id"], "action": "accept"}
        answered = first.post("api/answer", {**body, "content": {"answer": "card"}})
        assert answered.status_code == 200, answered.text
        held = first.first("api/pending", "pending")
        assert held["tool"] == "issue_refund"
    finally:
        first.process.send_signal(signal.SIGKILL)  # a restart while the call is held
        first.process.wait(30)

    second = Page("resume", "R", "--store", db, cwd=tmp_path)
    try:
        held = second.first("api/pending", "pending")  # the answered question is not asked again
        assert second.get("api/waiting")["questions"] == []
        decided = second.post(
            "api/decide", {"call_id": held["call_id"], "decision": "approve", "arguments": EDITED}
        )
        assert decided.status_code == 200, decided.text
        call = second.first("api/waiting", "results")
        assert (call["tool"], call["arguments"]) == ("issue_refund", EDITED)
        given = second.post("api/result", {"call_id": call["call_id"], "value": PAID})
        assert given.status_code == 200, given.text
        second.err.until("the viewer stays open")
    finally:
        second.process.send_signal(signal.SIGINT)
        code = second.process.wait(30)
    assert code == 0, "".join(second.err.seen)
    check_finished(db)

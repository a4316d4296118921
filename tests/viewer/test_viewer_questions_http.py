"""The viewer as a desk, over HTTP with the token: a live run's questions (`ask` steps) and
external calls wait for the page; `POST /api/answer` and `/api/result` give their values (a
value that does not fit is refused with 422 and the validator's message, the item stays open),
`"decision": "respond"` answers a held call in its place, and the run finishes with the values
in its state, recorded as given by the viewer. `jianmu run --view` leaves its questions to the
page instead of declining them."""

from __future__ import annotations

import contextlib
import re
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from viewer_helpers import PATIENCE, Lines, auth, jianmu_process, serving

from jianmu_bt.loader import load_tree
from jianmu_bt.tools import tool
from jianmu_bt.tools.external import ExternalTool
from jianmu_bt.viewer import live_source

pytestmark = pytest.mark.timeout(120)

REPLY = "Paid by card already: nothing to do."
PAID: list[int] = []

ci_result = ExternalTool(
    "ci_result",
    "Start the CI pipeline on a branch; its verdict comes back when the pipeline ends.",
    parameters={
        "type": "object",
        "properties": {"branch": {"type": "string"}},
        "required": ["branch"],
    },
    output_schema={
        "type": "object",
        "properties": {"passed": {"type": "boolean"}},
        "required": ["passed"],
    },
)


@tool
def pay(amount: int) -> str:
    """Pretend to pay an amount."""
    PAID.append(amount)
    return f"paid {amount}"


DESK = """
version: 1
name: desk
state:
  plan: {type: string}
  budget: {type: dict}
  verdict: {type: dict}
  receipt: {type: string}
tools: [ci_result, pay]
guard: {approve: [pay]}
root:
  sequence:
    name: Main
    children:
      - ask: {name: PickPlan, question: "Which plan?", choices: [careful, fast], output: plan}
      - ask:
          name: Budget
          question: "How much may it cost?"
          output: budget
          schema:
            type: object
            properties:
              amount: {type: integer, minimum: 1, maximum: 100, title: Amount}
              note: {type: string, default: none}
            required: [amount]
      - tool: {name: CI, tool: ci_result, arguments: {branch: main}, output: verdict}
      - tool: {name: Pay, tool: pay, arguments: {amount: 5}, output: receipt}
"""

ASK_ONLY = """
version: 1
name: asking
state:
  plan: {type: string}
root:
  ask: {name: PickPlan, question: "Which plan?", choices: [careful, fast], output: plan}
"""


def wait_until(check) -> Any:
    """Poll `check()` until it gives something true, and return that."""
    stop = threading.Event()
    for _ in range(int(PATIENCE / 0.05)):
        found = check()
        if found:
            return found
        stop.wait(0.05)
    raise AssertionError("never happened")


class DeskRun:
    """A viewer serving the desk tree's durable run (in a thread of its own)."""

    def __init__(self, tree: Any, server: Any, store: Path, **options: Any) -> None:
        self.tree, self.server = tree, server
        self.results: list[Any] = []
        self.worker = threading.Thread(
            target=lambda: self.results.append(
                tree.run(store=store, run_id="R", timeout=PATIENCE, **options)
            )
        )
        self.worker.start()

    def post(self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None):
        given = auth(self.server) if headers is None else headers
        return httpx.post(self.server.url + path, json=body, headers=given, timeout=30)

    def waiting(self) -> dict[str, list[dict[str, Any]]]:
        answer = httpx.get(self.server.url + "api/waiting", headers=auth(self.server))
        assert answer.status_code == 200, answer.text
        return answer.json()

    def question(self, step: str) -> dict[str, Any]:
        """The open question the step `step` asks (waited for)."""
        return wait_until(
            lambda: next((q for q in self.waiting()["questions"] if q["server"] == step), None)
        )

    def finish(self) -> Any:
        self.worker.join(PATIENCE)
        assert not self.worker.is_alive()
        return self.results[0]


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[tuple[Any, Any]]:
    PAID.clear()
    path = tmp_path / "desk.yaml"
    path.write_text(DESK)
    tree = load_tree(path, tools=[ci_result, pay])
    source = live_source(tree)
    with serving(source) as server:
        yield tree, server
        for question in tree.pending_questions():
            tree.answer(question.id, "decline", reason="the test ended")
        for record in tree.pending_approvals():
            tree.reject(record.call_id, "the test ended")
    tree.close()


def test_the_page_answers_gives_the_result_and_responds_and_the_run_finishes(desk, tmp_path):
    tree, server = desk
    run = DeskRun(tree, server, tmp_path / "runs.db")
    plan = run.question("PickPlan")
    assert plan["message"] == "Which plan?" and plan["source"] == "tree"
    (field,) = plan["fields"]
    assert field["name"] == "answer" and field["required"]
    assert field["choices"] == [["careful", "careful"], ["fast", "fast"]]
    done = run.post("api/answer", {"question_id": plan["question_id"], "action": "accept",
                                   "content": {"answer": "fast"}})  # fmt: skip
    assert done.status_code == 200, done.text
    assert done.json() == {"question_id": plan["question_id"], "action": "accept"}

    budget = run.question("Budget")
    fields = {f["name"]: f for f in budget["fields"]}
    assert fields["amount"]["type"] == "integer" and fields["amount"]["title"] == "Amount"
    assert fields["note"]["default"] == "none" and not fields["note"]["required"]
    too_much = {"question_id": budget["question_id"], "action": "accept",
                "content": {"amount": 500}}  # fmt: skip
    refused = run.post("api/answer", too_much)
    assert refused.status_code == 422
    assert refused.json()["error"] == (
        f"the answer to question {budget['question_id']} does not fit its form: "
        "amount: 500 is greater than the maximum of 100"
    )
    assert [q["server"] for q in run.waiting()["questions"]] == ["Budget"]  # still open
    fine = {**too_much, "content": {"amount": 40, "note": "tight"}}
    assert run.post("api/answer", fine).status_code == 200

    (call,) = wait_until(lambda: run.waiting()["results"])
    assert call["tool"] == "ci_result" and call["arguments"] == {"branch": "main"}
    assert call["schema"]["required"] == ["passed"] and call["deadline"] is None
    call_id = call["call_id"]
    bad = run.post("api/result", {"call_id": call_id, "value_json": '{"passed": "no"}'})
    assert bad.status_code == 422
    assert bad.json()["error"] == (
        f"the result for call {call_id} does not fit ci_result's output schema: "
        "result.passed: 'no' is not of type 'boolean'"
    )
    not_json = run.post("api/result", {"call_id": call_id, "value_json": "{passed: true"})
    assert not_json.status_code == 400
    assert not_json.json()["error"].startswith("the result is not JSON at line 1 column 2")
    assert [c["call_id"] for c in run.waiting()["results"]] == [call_id]  # still waits
    given = run.post("api/result", {"call_id": call_id, "value_json": '{"passed": true}'})
    assert given.json() == {"call_id": call_id, "supplied": True}

    (held,) = wait_until(tree.pending_approvals)
    empty = run.post("api/decide", {"call_id": held.call_id, "decision": "respond", "reply": " "})
    assert empty.status_code == 400 and empty.json()["error"] == "'reply' must be a non-empty text"
    said = {"call_id": held.call_id, "decision": "respond", "reply": REPLY}
    assert run.post("api/decide", said).json() == {
        "call_id": held.call_id,
        "decision": "responded",
    }

    result = run.finish()
    assert result.run_status == "succeeded", result.reason
    state = tree.state
    assert state.get("plan") == "fast"
    assert state.get("budget") == {"amount": 40, "note": "tight"}
    assert state.get("verdict") == {"passed": True}
    assert state.get("receipt").endswith(REPLY) and PAID == []  # answered, never run
    assert tree.question(plan["question_id"]).answer.by == "viewer"
    assert tree.guard.approvals.get(held.call_id).decided_by == "viewer"
    assert run.waiting() == {"questions": [], "results": []}


def test_unknown_ids_and_malformed_bodies_get_one_line_each(desk, tmp_path):
    tree, server = desk
    run = DeskRun(tree, server, tmp_path / "runs.db")
    question_id = run.question("PickPlan")["question_id"]
    cases = [
        ("api/answer", {"question_id": "q_nope", "action": "decline"}, 404,
         "no question has the id 'q_nope'"),
        ("api/answer", {"question_id": question_id, "action": "cancel"}, 400,
         "'action' must be 'accept' or 'decline' ('reason' a string)"),
        ("api/answer", {"question_id": question_id, "action": "accept"}, 400,
         "an 'accept' needs 'content': a JSON object of the form's fields"),
        ("api/answer", {"action": "accept", "content": {}}, 400,
         "'question_id' must be a non-empty string"),
        ("api/result", {"call_id": "call_nope", "value": 1}, 404,
         "no external call 'call_nope' waits for a result"),
        ("api/result", {"call_id": "call_nope"}, 400,
         "give the result as 'value' (JSON) or 'value_json' (its text)"),
    ]  # fmt: skip
    for path, body, status, message in cases:
        answer = run.post(path, body)
        assert (answer.status_code, answer.json()) == (status, {"error": message}), path
    assert [q["question_id"] for q in run.waiting()["questions"]] == [question_id]
    declined = run.post(
        "api/answer", {"question_id": question_id, "action": "decline", "reason": "not today"}
    )
    assert declined.status_code == 200
    result = run.finish()
    assert result.run_status == "failed"
    answered = tree.question(question_id).answer
    assert (answered.action, answered.reason, answered.by) == ("decline", "not today", "viewer")
    again = run.post("api/answer", {"question_id": question_id, "action": "decline"})
    assert again.status_code == 409 and again.json() == {"error": "the run has ended (failed)"}


def test_answers_and_results_need_the_token_and_this_servers_origin(desk, tmp_path):
    tree, server = desk
    run = DeskRun(tree, server, tmp_path / "runs.db")
    question_id = run.question("PickPlan")["question_id"]
    port = server.url.rstrip("/").rsplit(":", 1)[1]
    token = auth(server)
    answer = {"question_id": question_id, "action": "accept", "content": {"answer": "fast"}}
    result = {"call_id": "c", "value": 1}
    for path, body in (("api/answer", answer), ("api/result", result)):
        for headers in ({}, {"X-Jianmu-Token": "wrong"}):
            refused = run.post(path, body, headers=headers)
            assert refused.status_code == 403 and "no valid token" in refused.json()["error"]
        in_query = httpx.post(server.url + path, json=body, params={"token": server.token})
        assert in_query.status_code == 403  # actions take the header only
        foreign = run.post(path, body, headers={**token, "Origin": "http://evil.example"})
        assert foreign.status_code == 403
        rebound = run.post(path, body, headers={**token, "Host": f"evil.example:{port}"})
        assert rebound.status_code == 403
    assert httpx.get(server.url + "api/waiting").status_code == 403
    reads = httpx.get(server.url + "api/waiting", params={"token": server.token})
    assert [q["question_id"] for q in reads.json()["questions"]] == [question_id]  # unanswered


def test_a_paused_runs_question_is_refused_with_how_to_continue(desk, tmp_path):
    tree, server = desk
    run = DeskRun(tree, server, tmp_path / "runs.db", hold="pause")  # --approve later
    result = run.finish()
    assert result.run_status == "paused"
    refused = run.post(
        "api/answer", {"question_id": "q_x", "action": "accept", "content": {"answer": "fast"}}
    )
    assert refused.status_code == 409
    assert refused.json()["error"] == (
        "the run has ended (paused): continue with `jianmu resume R --answer q_x=JSON`"
    )


def test_jianmu_run_view_leaves_its_questions_to_the_page(tmp_path):
    (tmp_path / "asking.yaml").write_text(ASK_ONLY)
    process = jianmu_process("run", "asking.yaml", "--view", "--store", "runs.db", cwd=tmp_path)
    out, err = Lines(process.stdout), Lines(process.stderr)
    try:
        url = re.search(r"http://127\.0\.0\.1:\d+/", err.until("jianmu viewer:")).group(0)
        token = {"X-Jianmu-Token": err.until("access token:").split()[2]}

        def asked() -> list[dict[str, Any]]:
            return httpx.get(url + "api/waiting", headers=token).json()["questions"]

        (question,) = wait_until(asked)  # waits for the page: not declined by the command
        body = {"question_id": question["question_id"], "action": "accept",
                "content": {"answer": "careful"}}  # fmt: skip
        answered = httpx.post(url + "api/answer", json=body, headers=token, timeout=30)
        assert answered.status_code == 200, answered.text
        err.until("the viewer stays open")
        assert "succeeded" in out.until("finished")
        assert "plan" in out.until("careful")  # the summary's state change
        # (These requests also give the command time to start waiting for Ctrl-C.)
        assert asked() == []
        tree = httpx.get(url + "api/tree", headers=token).json()
        assert [node["name"] for node in tree["nodes"]] == ["PickPlan"]
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(30)
    said = "".join(err.seen + rest(err))
    assert code == 0, said
    assert "Traceback" not in said


def rest(lines: Lines) -> list[str]:
    """The lines of an ended process's pipe not read yet."""
    found = []
    with contextlib.suppress(AssertionError):  # the pipe's end
        while True:
            found.append(lines.until("\n"))
    return found

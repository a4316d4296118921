"""`POST /api/decide` with `"arguments"`: a held call approved with edited arguments runs with
them, recorded as decided in the viewer; text that is not a JSON object is refused with 400, an
edit the tree refuses (the tool's schema, a guard policy) with 422, each with the reason, and the
call stays held; the token and the Origin are checked as for every other decision."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import py_trees
import pytest
from viewer_helpers import PATIENCE, auth, serving

from jianmu_bt import AgentState, PythonTree, StateManager, ToolNode
from jianmu_bt.guard import ApprovalRequired, ArgumentPredicate, GuardEnforcer, path_outside
from jianmu_bt.tools import tool
from jianmu_bt.viewer import live_source

pytestmark = pytest.mark.timeout(90)

SAVED: list[str] = []


@tool(effect_tags=["file_write"])
def save(path: str) -> str:
    """Pretend to save a file."""
    SAVED.append(path)
    return f"saved {path}"


class Saved(AgentState):
    """What the step wrote."""

    receipt: str | None = None


def saving_tree(folder: Path) -> PythonTree:
    """One `save` of a file in `folder`, held for approval; saving outside `folder` is denied."""
    guard = GuardEnforcer(
        [ApprovalRequired(["save"]), ArgumentPredicate("save", path_outside(str(folder)))]
    )
    node = ToolNode(save, "Save", arguments={"path": str(folder / "a.txt")}, output_key="receipt")

    def build() -> py_trees.behaviour.Behaviour:
        return py_trees.composites.Sequence("Main", memory=True, children=[node])

    return PythonTree("saving", build, StateManager(Saved), guard=guard)


class HeldRun:
    """A viewer serving a tree's run that waits on a held `save` call."""

    def __init__(self, tree: PythonTree, server: Any) -> None:
        self.tree, self.server = tree, server
        self.results: list[Any] = []
        self.worker = threading.Thread(
            target=lambda: self.results.append(tree.run(timeout=PATIENCE))
        )
        self.worker.start()
        stop = threading.Event()
        while not tree.pending_approvals() and self.worker.is_alive():
            stop.wait(0.05)
        (self.record,) = tree.pending_approvals()
        self.call_id = self.record.call_id

    def decide(
        self, arguments: Any, headers: dict[str, str] | None = None, **body: Any
    ) -> httpx.Response:
        """POST /api/decide approving the call with `arguments` (with the token unless
        `headers` says otherwise)."""
        sent = {"call_id": self.call_id, "decision": "approve", "arguments": arguments, **body}
        given = auth(self.server) if headers is None else headers
        return httpx.post(self.server.url + "api/decide", json=sent, headers=given, timeout=30)

    def still_held(self) -> bool:
        return [r.call_id for r in self.tree.pending_approvals()] == [self.call_id]


@pytest.fixture
def held(tmp_path: Path) -> Iterator[HeldRun]:
    SAVED.clear()
    tree = saving_tree(tmp_path)
    source = live_source(tree)
    with serving(source) as server:
        run = HeldRun(tree, server)
        try:
            yield run
        finally:
            for record in tree.pending_approvals():
                tree.reject(record.call_id, "the test ended")
            run.worker.join(PATIENCE)
    tree.close()


def test_an_edited_approval_runs_the_call_with_the_edited_arguments(held, tmp_path):
    other = str(tmp_path / "b.txt")
    answer = held.decide(f'{{"path": "{other}"}}')  # the editor's text
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"call_id": held.call_id, "decision": "approved", "edited": True}
    held.worker.join(PATIENCE)
    assert held.results[0].status.name == "SUCCESS"
    assert [other] == SAVED
    record = held.tree.guard.approvals.get(held.call_id)
    assert record.edited and record.decided_by == "viewer"
    assert record.approved_arguments == {"path": other}


def test_a_json_object_is_taken_as_well_as_its_text(held, tmp_path):
    other = str(tmp_path / "c.txt")
    assert held.decide({"path": other}).status_code == 200
    held.worker.join(PATIENCE)
    assert [other] == SAVED


@pytest.mark.parametrize(
    ("arguments", "status", "message"),
    [
        ("{path: 1", 400, "the edited arguments are not JSON at line 1 column 2"),
        ("[1]", 400, "the edited arguments must be a JSON object"),
        (7, 400, "the edited arguments must be a JSON object"),
        ('{"path": 5}', 422, "the edited arguments do not fit save's schema: arguments.path"),
        ('{"path": "/etc/passwd"}', 422, "the guard refuses the edited call"),
    ],
)
def test_a_refused_edit_says_why_and_the_call_stays_held(held, arguments, status, message):
    refused = held.decide(arguments)
    assert refused.status_code == status, refused.text
    assert message in refused.json()["error"]
    assert held.still_held() and SAVED == []


def test_only_an_approval_carries_edited_arguments(held):
    refused = held.decide('{"path": "x"}', decision="deny")
    assert refused.status_code == 400
    assert "only an approval" in refused.json()["error"]
    assert held.still_held()


def test_an_edit_needs_the_token_and_this_servers_origin(held):
    port = held.server.url.rstrip("/").rsplit(":", 1)[1]
    token = auth(held.server)
    for headers in ({}, {"X-Jianmu-Token": "wrong"}, {"X-Jianmu-Token": "é".encode()}):
        refused = held.decide('{"path": "/tmp/x"}', headers=headers)  # type: ignore[arg-type]
        assert refused.status_code == 403 and "no valid token" in refused.json()["error"]
    in_query = httpx.post(
        held.server.url + "api/decide",
        json={"call_id": held.call_id, "decision": "approve", "arguments": "{}"},
        params={"token": held.server.token},
    )
    assert in_query.status_code == 403  # actions take the header only
    foreign = held.decide("{}", headers={**token, "Origin": "http://evil.example"})
    assert foreign.status_code == 403
    rebound = held.decide("{}", headers={**token, "Host": f"evil.example:{port}"})
    assert rebound.status_code == 403
    assert held.still_held() and SAVED == []

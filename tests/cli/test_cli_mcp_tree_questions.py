"""`jianmu mcp serve --tree FILE --run-tool`: the questions of the tree's `ask` steps go to the
MCP client as elicitation (`elicitation/create`, form mode), with a real server process and the
official SDK client. A client that cannot be asked (no elicitation capability; the 2026-07-28
protocol, whose requests carry no server's request back) leaves the questions unattended."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from cli_helpers import REPO
from mcp import Client, StdioServerParameters

from jianmu_bt.store import open_store

pytestmark = pytest.mark.anyio

TREE = """
version: 1
name: picker
state:
  topic: {type: string, input: true, description: What the plan is for.}
  plan: {type: string}
root:
  ask:
    name: PickPlan
    question: "Which plan for {topic}?"
    choices: [careful, fast]
    output: plan
    default: careful
    wait: WAIT
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def served(tmp_path: Path, *extra: str, wait: float = 600) -> StdioServerParameters:
    """The server of a tree with one `ask` step (answer: careful or fast; default careful)."""
    tree = tmp_path / "picker.yaml"
    tree.write_text(TREE.replace("WAIT", str(wait)))
    args = ["-m", "jianmu_bt.cli", "mcp", "serve", "--tree", str(tree), "--run-tool", *extra]
    return StdioServerParameters(
        command=sys.executable, args=args, env={"PYTHONPATH": str(REPO)}, cwd=str(tmp_path)
    )


class Person:
    """An elicitation callback that answers as told and keeps what it was asked."""

    def __init__(self, action: str = "accept", content: dict[str, Any] | None = None) -> None:
        self.action = action
        self.content = content
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> Any:
        self.asked.append(params)
        content = self.content if self.action == "accept" else None
        return types.ElicitResult(action=self.action, content=content)


async def run_picker(params: StdioServerParameters, **client: Any) -> dict[str, Any]:
    async with Client(params, read_timeout_seconds=60, **client) as connected:
        result = await connected.call_tool("run_picker", {"topic": "the launch"})
    assert not result.is_error, result.content
    return dict(result.structured_content or {})


async def test_the_clients_answer_goes_to_state(tmp_path: Path) -> None:
    person = Person("accept", {"answer": "fast"})
    outcome = await run_picker(served(tmp_path), mode="legacy", elicitation_callback=person)
    assert outcome["status"] == "succeeded", outcome
    assert outcome["state"]["plan"] == "fast"
    [asked] = person.asked
    assert asked.message == "Which plan for the launch?"
    form = asked.requested_schema
    assert form["required"] == ["answer"]
    assert form["properties"]["answer"]["enum"] == ["careful", "fast"]


async def test_a_declined_question_fails_the_step_with_the_reason(tmp_path: Path) -> None:
    person = Person("decline")
    outcome = await run_picker(served(tmp_path), mode="legacy", elicitation_callback=person)
    assert len(person.asked) == 1
    assert outcome["status"] == "failed", outcome
    assert "declined" in outcome["reason"] and "MCP client" in outcome["reason"]
    assert outcome["state"]["plan"] is None


async def test_an_answer_outside_the_choices_is_refused_and_declined(tmp_path: Path) -> None:
    person = Person("accept", {"answer": "reckless"})
    outcome = await run_picker(served(tmp_path), mode="legacy", elicitation_callback=person)
    assert outcome["status"] == "failed", outcome
    assert "does not fit its form" in outcome["reason"] and "reckless" in outcome["reason"]


async def test_a_client_without_elicitation_gets_the_default(tmp_path: Path) -> None:
    outcome = await run_picker(served(tmp_path), mode="legacy")
    assert outcome["status"] == "succeeded", outcome
    assert outcome["state"]["plan"] == "careful"


async def test_a_client_without_a_back_channel_is_not_asked(tmp_path: Path) -> None:
    # The 2026-07-28 protocol has no server's request in the middle of a call.
    person = Person("accept", {"answer": "fast"})
    outcome = await run_picker(served(tmp_path), elicitation_callback=person)
    assert person.asked == []
    assert outcome["status"] == "succeeded" and outcome["state"]["plan"] == "careful"


async def test_a_durable_run_nobody_can_be_asked_for_pauses(tmp_path: Path) -> None:
    params = served(tmp_path, "--store", str(tmp_path / "runs.db"))
    outcome = await run_picker(params, mode="legacy")
    assert outcome["status"] == "paused", outcome
    assert "waits for an answer" in outcome["reason"]


async def test_a_durable_run_asks_a_client_that_can_answer_and_journals_the_answer(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    person = Person("accept", {"answer": "fast"})
    outcome = await run_picker(
        served(tmp_path, "--store", str(db)), mode="legacy", elicitation_callback=person
    )
    assert outcome["status"] == "succeeded", outcome
    assert outcome["state"]["plan"] == "fast" and len(person.asked) == 1
    with open_store(db, create=False) as store:
        log = store.journal_log(outcome["run_id"])
    rows = [(e.status, (e.result or {}).get("by")) for e in log]
    assert rows == [("waiting", None), ("done", "mcp client")]


class Silent:
    """An elicitation callback that never answers, and notes when its request is withdrawn."""

    def __init__(self) -> None:
        self.asked = 0
        self.withdrawn = anyio.Event()

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> Any:
        self.asked += 1
        try:
            await anyio.sleep_forever()
        finally:
            self.withdrawn.set()


async def test_a_question_unanswered_in_time_is_withdrawn_from_the_client(
    tmp_path: Path,
) -> None:
    silent = Silent()
    params = served(tmp_path, wait=0.5)
    async with Client(
        params, read_timeout_seconds=60, mode="legacy", elicitation_callback=silent
    ) as connected:
        first = await connected.call_tool("run_picker", {"topic": "x"})
        with anyio.fail_after(30):
            await silent.withdrawn.wait()
        second = await connected.call_tool("run_picker", {"topic": "y"})
    for result in (first, second):
        outcome = result.structured_content or {}
        assert outcome["status"] == "succeeded" and outcome["state"]["plan"] == "careful"
    assert silent.asked == 2


async def test_a_cancelled_run_withdraws_its_question(tmp_path: Path) -> None:
    silent = Silent()
    person = Person("accept", {"answer": "fast"})
    asked = [silent, person]

    async def answer(context: Any, params: types.ElicitRequestParams) -> Any:
        return await asked[0](context, params)

    params = served(tmp_path)
    async with Client(
        params, read_timeout_seconds=60, mode="legacy", elicitation_callback=answer
    ) as connected:
        async with anyio.create_task_group() as group:

            async def first_run() -> None:
                await connected.call_tool("run_picker", {"topic": "x"})

            group.start_soon(first_run)
            with anyio.fail_after(30):
                while silent.asked == 0:
                    await anyio.sleep(0.01)
            group.cancel_scope.cancel()
        with anyio.fail_after(30):
            await silent.withdrawn.wait()
        asked.pop(0)
        second = await connected.call_tool("run_picker", {"topic": "y"})
    outcome = second.structured_content or {}
    assert outcome["status"] == "succeeded" and outcome["state"]["plan"] == "fast"


class Session:
    def __init__(self, elicitation: Any, back_channel: bool = True) -> None:
        self.client_capabilities = types.ClientCapabilities(elicitation=elicitation)
        self.can_send_request = back_channel


class Context:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.request_id = 7


def test_only_a_client_that_takes_forms_over_a_back_channel_is_asked() -> None:
    from jianmu_bt.mcp.server_questions import session_asker

    form = types.ElicitationCapability(form=types.FormElicitationCapability())
    url = types.ElicitationCapability(url=types.UrlElicitationCapability())
    assert session_asker(Context(Session(form))) is not None
    assert session_asker(Context(Session(types.ElicitationCapability()))) is not None
    assert session_asker(Context(Session(url))) is None
    assert session_asker(Context(Session(None))) is None
    assert session_asker(Context(Session(form, back_channel=False))) is None

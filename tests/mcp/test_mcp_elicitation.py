"""MCP elicitation in YAML trees: a server's questions for a person go to the run's desk.

Servers are real processes: `mcp_eliciting_server.py` (the official SDK's MCPServer; it asks in
the 2026-07-28 way, inside the call's result) and the reference server-everything (it asks with
a request of its own in the middle of the call, the 2025-11-25 way). Answers come from another
thread through `Tree.answer` (attending the tree's questions), from the CLI desk (`ApprovalDesk`,
as `jianmu run --approve` uses it) and from a real `jianmu run --approve ask` process reading
stdin. Runs are synchronous (`tree.run`), so this module has no module-scoped async fixture.
Bounds and faults (unattended runs, hostile forms, halts): test_mcp_elicitation_bounds.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from elicitation_support import ASKER, HANG_GUARD, Person, Recorder, tree_text, wait_for_question
from mcp_test_support import PYTHON, ROOT, everything_command, run_docs_demo

from jianmu_bt.cli.approvals import ApprovalDesk
from jianmu_bt.cli.questions import NO_PERSON
from jianmu_bt.loader import load_tree
from jianmu_bt.loader.tree import Tree
from jianmu_bt.mcp.deadlines import CallDeadlines
from jianmu_bt.runtime.questions import AnswerError


def test_an_answer_from_another_thread_reaches_the_server_even_after_the_call_timeout() -> None:
    # The call's timeout is 0.5 s; the person answers after about 1 s: the wait does not count.
    text = tree_text("elicitation: ask", "tool: {name: Ask, tool: profile, output: a}", timeout=0.5)
    refusals: list[str] = []
    with load_tree(text) as tree:
        seen = Recorder()
        tree.events.subscribe(seen)

        def answer(tree: Tree) -> None:
            question = wait_for_question(tree)
            time.sleep(1.0)  # longer than the call's timeout
            with pytest.raises(AnswerError) as refused:
                tree.answer(question.id, "accept", {"age": "old"})
            refusals.append(str(refused.value))
            assert [q.id for q in tree.pending_questions()] == [question.id]  # still open
            tree.answer(question.id, "accept", {"name": "Ada", "age": 36})

        with tree.attend_questions():
            person = Person(tree, answer)
            result = tree.run(timeout=HANG_GUARD)
            person.check()
        assert result.ok, result.reason
        assert tree.state.read_port("a") == 'accept {"age": 36, "name": "Ada"}'
        assert tree.pending_questions() == []
    assert "'name' is a required property" in refusals[0]
    assert "age: 'old' is not of type 'integer'" in refusals[0]
    assert seen.kinds() == ["input.requested", "input.answered"]
    asked, answered = (event.data for event in seen.events)
    assert asked["server"] == "asker" and asked["message"] == "Who are you?"
    assert asked["schema"]["required"] == ["name"]
    assert (answered["question_id"], answered["action"], answered["by"]) == (
        asked["question_id"],
        "accept",
        "api",
    )


def test_unanswered_questions_are_declined_after_their_timeout() -> None:
    text = tree_text("elicitation: {timeout: 0.3}", "tool: {name: Ask, tool: profile, output: a}")
    with load_tree(text) as tree:
        seen = Recorder()
        tree.events.subscribe(seen)
        with tree.attend_questions():
            result = tree.run(timeout=HANG_GUARD)
        assert result.ok, result.reason
        assert tree.state.read_port("a") == "decline null"
    assert seen.kinds() == ["input.requested", "input.answered"]
    answered = seen.events[1].data
    assert (answered["action"], answered["by"]) == ("decline", "timeout")
    assert answered["reason"] == "no answer within 0.3s"


def test_policy_and_unusable_questions_are_declined_with_the_reason() -> None:
    declining = tree_text(
        "elicitation: decline",
        "tool: {name: Ask, tool: profile, output: a}",
        "tool: {name: Nested, tool: nested, output: b}",
    )
    with load_tree(declining) as tree:
        seen = Recorder()
        tree.events.subscribe(seen)
        assert tree.run(timeout=HANG_GUARD).ok
        assert (tree.state.read_port("a"), tree.state.read_port("b")) == ("decline null",) * 2
    reasons = [event.data["reason"] for event in seen.events]
    assert seen.kinds() == ["input.answered", "input.answered"]  # never asked anyone
    assert reasons == ["declined by policy (`elicitation: decline` for this server)"] * 2

    asking = tree_text(
        "elicitation: ask",
        "tool: {name: Nested, tool: nested, output: b}",
        "tool: {name: Visit, tool: visit, output: c}",
    )
    with load_tree(asking) as tree:
        seen = Recorder()
        tree.events.subscribe(seen)
        assert tree.run(timeout=HANG_GUARD).ok
        assert (tree.state.read_port("b"), tree.state.read_port("c")) == ("decline null", "decline")
    nested, visit = (event.data["reason"] for event in seen.events)
    assert nested.startswith("unusable question: field 'address' has type 'object'")
    assert visit.startswith("URL-mode elicitation is not supported")


def test_a_server_asking_in_a_loop_is_refused_past_max_requests_and_the_tree_goes_on() -> None:
    text = f"""
state: {{a: string, note: string}}
tools:
  - mcp: {{command: {PYTHON}, args: [{ASKER}], name: asker, timeout: 20,
           elicitation: {{max_requests: 3}}}}
root:
  sequence:
    children:
      - selector:
          children:
            - tool: {{name: Nag, tool: nag, arguments: {{times: 50}}, output: a}}
            - set: {{name: GaveUp, values: {{note: gave up}}}}
      - set: {{name: After, values: {{a: went on}}}}
"""
    with load_tree(text) as tree:
        seen = Recorder()
        tree.events.subscribe(seen)
        failures: list[str] = []
        tree.events.subscribe(
            lambda e: failures.append(e.data["error"]) if e.type == "tool.call.failed" else None
        )
        with tree.attend_questions(lambda q: tree.answer(q.id, "accept", {"ok": True})):
            result = tree.run(timeout=HANG_GUARD)
        assert result.ok, result.reason
        assert tree.state.read_port("note") == "gave up"
        assert tree.state.read_port("a") == "went on"
    assert seen.kinds() == ["input.requested", "input.answered"] * 3 + ["input.refused"]
    limit = "MCP server 'asker' asked more than 3 question(s) in this run; refused"
    assert seen.events[-1].data["reason"].startswith(limit)
    assert "elicitation: {max_requests: N}" in seen.events[-1].data["reason"]
    assert len(failures) == 1 and limit in failures[0]


@pytest.mark.parametrize("mode", ["all", "none"])
def test_the_cli_desk_answers_by_its_mode(mode: str) -> None:
    text = tree_text(
        "elicitation: ask",
        "tool: {name: Ask, tool: profile, output: a}",
        "tool: {name: Nag, tool: nag, arguments: {times: 1}, output: b}",
    )
    said: list[str] = []

    class Out:
        def write(self, text: str) -> None:
            said.append(text)

        def flush(self) -> None:
            pass

    with load_tree(text) as tree:
        tree.events.subscribe(ApprovalDesk(tree, mode, out=Out()))  # type: ignore[arg-type]
        with tree.attend_questions():
            assert tree.run(timeout=HANG_GUARD).ok
        outputs = (tree.state.read_port("a"), tree.state.read_port("b"))
    shown = "".join(said)
    if mode == "all":  # `name` has no default: declined; the yes/no form has one: accepted
        assert outputs == ("decline null", "answered 1")
        assert "declined: --approve all: no default for required field(s) name" in shown
        assert 'answered {"ok": true}' in shown
    else:
        assert outputs == ("decline null", "answered 1")  # the server takes a decline too
        assert shown.count(f"declined: {NO_PERSON}") == 2


def test_jianmu_run_approve_ask_asks_field_by_field_on_stdin(tmp_path: Path) -> None:
    tree_file = tmp_path / "ask.yaml"
    tree_file.write_text(
        tree_text("elicitation: ask", "tool: {name: Ask, tool: profile, output: a}")
    )
    # Answer it; an empty required name is asked again, so is a word for the age; the colour
    # is picked by its value in another case.
    typed = "y\n\nAda\nold\n40\nBLUE\n"
    done = subprocess.run(
        [sys.executable, "-m", "jianmu_bt.cli", "run", str(tree_file), "--approve", "ask"],
        input=typed,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert "MCP server 'asker' asks: Who are you? [q_" in done.stderr
    assert "name - Name: your name (text, required): " in done.stdout
    assert "age (whole number) [30]: " in done.stdout
    assert "colour (one of: red, green, blue) [green]: " in done.stdout
    assert "name is required" in done.stderr
    assert "'old' is not a whole number" in done.stderr
    # The run's activity tells of the question and its answer.
    assert "asker asks: Who are you?" in done.stdout + done.stderr
    assert "asker: question accept" in done.stdout + done.stderr
    assert 'accept {\\"age\\": 40, \\"colour\\": \\"blue\\", \\"name\\": \\"Ada\\"}' in json.dumps(
        done.stdout
    )


def test_server_everything_trigger_elicitation_request_through_a_tree() -> None:
    command = everything_command()
    text = f"""
state: {{out: string}}
tools:
  - mcp: {{command: {command}, args: [stdio], name: everything, timeout: 20}}
root:
  sequence:
    children:
      - tool: {{name: Ask, tool: trigger-elicitation-request, output: out}}
"""
    with load_tree(text) as tree:

        def answer(tree: Tree) -> None:
            question = wait_for_question(tree)
            assert question.server == "everything"
            answer = {"name": "Ada Lovelace", "check": True, "email": "ada@example.org"}
            answer |= {"integer": 7, "untitledMultipleSelectEnum": ["Piano", "Drums"]}
            with pytest.raises(AnswerError, match="integer: 700 is greater than the maximum"):
                tree.answer(question.id, "accept", {**answer, "integer": 700})
            tree.answer(question.id, "accept", answer)

        with tree.attend_questions():
            person = Person(tree, answer)
            result = tree.run(timeout=HANG_GUARD)
            person.check()
        assert result.ok, result.reason
        out = tree.state.read_port("out")
    assert "User provided the requested information" in out
    assert "- Name: Ada Lovelace" in out and "- Favorite Integer: 7" in out
    raw = json.loads(out.split("Raw result: ", 1)[1])
    assert raw["content"]["untitledMultipleSelectEnum"] == ["Piano", "Drums"]


def test_the_documented_elicitation_demo_runs(tmp_path: Path) -> None:
    done = run_docs_demo("elicitation_demo.py", tmp_path, HANG_GUARD)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n") == ["greeter asks: Who are you?", "Hello, Ada!", ""]


def test_held_call_deadlines_do_not_fire_and_resume_with_the_time_left() -> None:
    anyio.run(_held_deadlines)


async def _held_deadlines() -> None:
    deadlines = CallDeadlines()
    with anyio.CancelScope(deadline=anyio.current_time() + 0.2) as scope, deadlines.track(scope):
        with deadlines.held():
            await anyio.sleep(0.4)  # past the deadline: held, so not cancelled
            assert not scope.cancel_called
        left = scope.deadline - anyio.current_time()
        assert 0 < left <= 0.2
        await anyio.sleep(5)  # the time left runs out now
    assert scope.cancelled_caught

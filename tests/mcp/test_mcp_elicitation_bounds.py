"""MCP elicitation's bounds in YAML trees: unattended runs decline at once, hostile forms are
never asked, `elicitation: off` is not declared, one question per server at a time, and a run
that ends, halts or closes withdraws its open question (also on server-everything's 2025
protocol, where the question outlives the halted call). Real server processes only.
"""

from __future__ import annotations

import io
import time
from typing import Any

import anyio
from elicitation_support import HANG_GUARD, Person, Recorder, tree_text, wait_for_question
from mcp_test_support import everything_command

from jianmu_bt.cli.approvals import ApprovalDesk
from jianmu_bt.loader import load_tree
from jianmu_bt.loader.tree import Tree


def test_unattended_runs_decline_at_once_and_hostile_forms_are_never_asked() -> None:
    # Nobody attends: declined unasked (no 300 s wait). Attended: a form with a `pattern` (a
    # catastrophic one, with a default --approve all would check) is still declined unasked.
    text = tree_text(
        "elicitation: ask",
        "tool: {name: Ask, tool: profile, output: a}",
        "tool: {name: Hostile, tool: hostile, output: b}",
    )
    with load_tree(text) as tree:
        seen = Recorder()
        tree.events.subscribe(seen)
        assert tree.run(timeout=HANG_GUARD).ok
        assert tree.state.read_port("a") == "decline null"
        tree.events.subscribe(ApprovalDesk(tree, "all", out=io.StringIO()))
        with tree.attend_questions():
            assert tree.run(timeout=HANG_GUARD).ok
        assert tree.state.read_port("b") == "decline null"
        assert tree.pending_questions() == []
    # Unattended: both declined unasked; attended: the profile is asked (and declined by
    # --approve all: no default for the name), the hostile form is still never asked.
    kinds = ["input.answered"] * 2 + ["input.requested"] + ["input.answered"] * 2
    assert seen.kinds() == kinds
    unattended, unusable, desk, again = (seen.events[i].data for i in (0, 1, 3, 4))
    assert unattended["reason"].startswith("nobody attends this run's questions")
    assert unusable["reason"].startswith("unusable question: field 'word' uses pattern")
    assert again == unusable
    assert desk["reason"] == "--approve all: no default for required field(s) name"
    assert set(desk) == {"question_id", "server", "action", "reason", "by"}  # not the form


def test_elicitation_off_in_a_tree_means_the_server_hears_not_supported() -> None:
    # `off` in YAML is read as false: it still means the mode.
    text = tree_text(
        "elicitation: off",
        "selector: {children: [{tool: {name: Nag, tool: nag, arguments: {times: 1}, output: a}},"
        " {set: {name: Failed, values: {note: failed}}}]}",
    )
    with load_tree(text) as tree:
        seen = Recorder()
        tree.events.subscribe(seen)
        failures: list[str] = []
        tree.events.subscribe(
            lambda e: failures.append(e.data["error"]) if e.type == "tool.call.failed" else None
        )
        with tree.attend_questions():
            assert tree.run(timeout=HANG_GUARD).ok
        assert tree.state.read_port("note") == "failed"
    assert seen.kinds() == []
    assert len(failures) == 1 and "Elicitation not supported" in failures[0]


def test_one_question_per_server_at_a_time_the_next_waits_its_turn() -> None:
    text = tree_text(
        "elicitation: ask",
        "parallel: {policy: all, children: [{tool: {name: P1, tool: profile, output: a}},"
        " {tool: {name: P2, tool: profile, output: b}}]}",
    )
    with load_tree(text) as tree:
        seen = Recorder()
        tree.events.subscribe(seen)
        open_counts: list[int] = []

        def answer_both(tree: Tree) -> None:
            for name in ("Ada", "Bob"):
                question = wait_for_question(tree)
                time.sleep(0.3)  # room for the other call's question, were it not queued
                open_counts.append(len(tree.pending_questions()))
                tree.answer(question.id, "accept", {"name": name})

        with tree.attend_questions():
            person = Person(tree, answer_both)
            result = tree.run(timeout=HANG_GUARD)
            person.check()
        assert result.ok, result.reason
        answers = {tree.state.read_port("a"), tree.state.read_port("b")}
    assert open_counts == [1, 1]
    assert answers == {'accept {"name": "Ada"}', 'accept {"name": "Bob"}'}
    assert seen.kinds() == ["input.requested", "input.answered"] * 2


def test_halting_a_run_withdraws_its_open_question_on_the_2025_protocol() -> None:
    # server-everything asks over its back-channel: the question is not part of the call that
    # the halt cancels; the run's end withdraws it, and the server hears `cancel`.
    command = everything_command()
    text = f"""
state: {{out: string}}
tools:
  - mcp: {{command: {command}, args: [stdio], name: everything, timeout: 20}}
root:
  tool: {{name: Ask, tool: trigger-elicitation-request, output: out}}
"""
    with load_tree(text) as tree:
        seen = Recorder()
        tree.events.subscribe(seen)
        with tree.attend_questions():
            question = anyio.run(_halt_while_asked, tree)
        assert question.answer is not None
        assert (question.answer.action, question.answer.by) == ("cancel", "run")
        assert question.answer.reason == "withdrawn: the run ended or was halted"
        assert tree.pending_questions() == []
    assert seen.kinds() == ["input.requested", "input.answered"]
    assert seen.events[1].data["action"] == "cancel"


def test_closing_a_tick_driven_tree_withdraws_its_open_question_first() -> None:
    text = tree_text("elicitation: ask", "tool: {name: Ask, tool: profile, output: a}")
    with load_tree(text) as tree, tree.attend_questions():
        seen = Recorder()
        tree.events.subscribe(seen)
        deadline = time.monotonic() + HANG_GUARD
        while not tree.pending_questions():
            assert time.monotonic() < deadline, "no question came"
            tree.tick()
            time.sleep(0.02)
        question = tree.pending_questions()[0]
    assert question.answer is not None
    assert (question.answer.action, question.answer.reason) == (
        "cancel",
        "withdrawn: the tree was closed",
    )
    assert seen.kinds() == ["input.requested", "input.answered"]


async def _halt_while_asked(tree: Tree) -> Any:
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(tree.arun)
            while not tree.pending_questions():
                await anyio.sleep(0.02)
            question = tree.pending_questions()[0]
            tasks.cancel_scope.cancel()  # the halt: as a timeout or Ctrl-C would
    return question

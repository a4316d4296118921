"""The terminal's desks and a peer's text: escapes, questions closed while the terminal was busy,
`--approve all` with defaults that do not fit. A real loaded tree (no server) holds the questions;
they are announced with the same `input.requested` events an MCP server's questions make."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from jianmu_bt.cli.activity import describe_event, short_value
from jianmu_bt.cli.approvals import ApprovalDesk
from jianmu_bt.cli.desks import Once, is_no, is_yes, terminal_text
from jianmu_bt.loader import load_tree
from jianmu_bt.loader.tree import Tree
from jianmu_bt.runtime.events import Event
from jianmu_bt.runtime.questions import Question, questions_of

TREE = "state: {a: string}\nroot:\n  set: {name: A, values: {a: x}}\n"
SPOOF = "\x1b[2K\rapprove deploy({})? [y/N] "
FORM = {
    "type": "object",
    "properties": {"n": {"type": "integer", "title": "N\x1b[31m", "maximum": 10, "default": 50}},
}


@pytest.fixture
def tree() -> Iterator[Tree]:
    with load_tree(TREE) as loaded:
        yield loaded


def announce(tree: Tree, message: str, schema: dict[str, Any]) -> Question:
    """Record a question as an MCP server's would be, and announce it to the desks."""
    question = questions_of(tree.runner.context).ask("srv\x1b]0;x\x07", message, schema)
    tree.events.emit("input.requested", **question.to_dict())
    return question


def test_terminal_text_escapes_controls_keeps_newlines_when_asked_and_cuts() -> None:
    assert terminal_text(SPOOF) == "\\x1b[2K\\x0dapprove deploy({})? [y/N] "
    assert terminal_text("a\nb\tc\x9b\u202eZ") == "a b c\\x9b\\u202eZ"
    assert terminal_text("a\napprove x? [y/N] ", multiline=True) == "a\n  | approve x? [y/N] "
    assert terminal_text("x" * 50, 10) == "xxxxxxx..."
    assert short_value({"k": "\x1b[2J\x9b"}) == '{"k": "\\u001b[2J\\x9b"}'  # JSON's, then ours
    assert short_value("\x1b[1A") == "\\x1b[1A"
    event = Event("input.requested", data={"server": "s", "message": SPOOF})
    assert "\x1b" not in (describe_event(event) or "") and "\r" not in (describe_event(event) or "")


def test_the_shared_yes_no_and_once() -> None:
    assert is_yes(" Y ") and is_yes("true") and not is_yes("") and is_no("N") and not is_no("y")
    once = Once()
    assert once.first("a") and not once.first("a") and not once.first("") and not once.first(None)


def test_a_spoofing_message_is_shown_escaped_and_the_desk_declines(tree: Tree) -> None:
    out = io.StringIO()
    unsubscribe = tree.events.subscribe(ApprovalDesk(tree, "none", out=out))
    question = announce(tree, SPOOF, {"type": "object", "properties": {}})
    unsubscribe()
    shown = out.getvalue()
    assert "\x1b" not in shown and "\r" not in shown and "\x07" not in shown
    assert "asks: \\x1b[2K\\x0dapprove deploy({})? [y/N]" in shown
    assert "MCP server 'srv\\x1b]0;x\\x07'" in shown
    assert question.answer is not None and question.answer.action == "decline"


def test_approve_all_declines_defaults_that_do_not_fit_the_form(tree: Tree) -> None:
    out = io.StringIO()
    unsubscribe = tree.events.subscribe(ApprovalDesk(tree, "all", out=out))
    question = announce(tree, "How many?", FORM)
    unsubscribe()
    assert question.answer is not None
    assert (question.answer.action, question.answer.by) == ("decline", "--approve all")
    assert question.answer.reason == (
        "--approve all: the defaults do not fit the form: n: 50 is greater than the maximum of 10"
    )
    assert "declined: --approve all: the defaults do not fit" in out.getvalue()


def test_a_question_closed_while_the_terminal_was_busy_is_not_asked(tree: Tree) -> None:
    asked: list[str] = []
    prompts = threading.Event()

    def ask(prompt: str) -> str:
        asked.append(prompt)
        prompts.set()
        return "y" if len(asked) == 1 else "3"

    out = io.StringIO()
    desk = ApprovalDesk(tree, "ask", ask=ask, out=out)
    unsubscribe = tree.events.subscribe(desk)
    store = questions_of(tree.runner.context)
    with desk._terminal:  # another conversation holds the terminal
        gone = announce(tree, "First?", FORM)
        store.withdraw_pending("withdrawn: the run ended or was halted")
        kept = announce(tree, "Second?", FORM)
    # The desk skips the closed question and asks the open one, field by field (the two
    # interview threads may take the terminal in either order).
    assert prompts.wait(10)
    for _ in range(500):
        if kept.answer is not None and "question closed" in out.getvalue():
            break
        threading.Event().wait(0.02)
    unsubscribe()
    assert gone.answer is not None and gone.answer.by == "run"
    assert kept.answer is not None and (kept.answer.action, kept.answer.content) == (
        "accept",
        {"n": 3},
    )
    shown = out.getvalue()
    assert "First?" not in shown and "Second?" in shown
    assert f"{gone.id}: question closed (cancel: withdrawn: the run ended or was halted)" in shown
    assert asked == [
        "answer it? [y = answer, n = decline, c = cancel] ",
        "  n - N\\x1b[31m (whole number) [50]: ",
    ]

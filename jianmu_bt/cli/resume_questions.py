"""`jianmu resume --approve ask`: the person at the terminal decides each waiting call.

Before the run goes on, each call the command line did not decide is shown whole (why it waits,
its complete arguments, escaped: `jianmu_bt.cli.call_text`) and asked about: `y` approves, no
(the default) denies, and for a held call `e` approves it with other arguments, typed as one
JSON object (`jianmu_bt.cli.edited_arguments`), and `r` answers it in its place with a reply
typed there (it does not run; the agent reads the reply as its result, as for `--respond`). An
edit that is not a JSON object or does not fit the tool's schema is said in one line, and the
same call is asked about again; the guard checks the edited call against its policies when the
run reaches it, as for `--edit`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jianmu_bt.cli.call_text import escape_hidden, held_call_text
from jianmu_bt.cli.edited_arguments import (
    EDIT_PROMPT,
    HELD_HINT,
    RESPOND_PROMPT,
    EditTextError,
    arguments_from_text,
    is_edit,
    is_respond,
)

#: Why a call in doubt waits (its journal row says no more than its status).
IN_DOUBT = (
    "in doubt: it was running when the run stopped and its tool is not declared read-only or "
    "idempotent, so it may or may not have happened"
)
#: Why a held call waits, when its journal row does not keep the guard's reason.
HELD = "the guard holds it until a reviewer decides"
#: The answers a held call's question takes (yes, no: the default, edit), and a call in doubt's.
HELD_CHOICES = "[y/N/e]"
DOUBT_CHOICES = "[y/N]"

#: Why an edit of a call (a journal entry) with these arguments is refused, or None.
EditCheck = Callable[[Any, dict[str, Any]], "str | None"]


@dataclass
class Answers:
    """What the person decided: calls to approve, to deny, to approve with other arguments, to
    answer in their place. Filled in place: the command line's own decisions."""

    approve: list[str]
    deny: list[str]
    edits: dict[str, dict[str, Any]] = field(default_factory=dict)
    responses: dict[str, str] = field(default_factory=dict)

    def decided(self, call: Any) -> bool:
        """Whether the call (a journal entry) was decided already (or `--approve all`)."""
        named = set(self.approve) | set(self.deny) | set(self.edits) | set(self.responses)
        return "all" in named or call.call_id in named or call.key in named


def question_text(call: Any) -> str:
    """What the person reads about a waiting journal entry before answering: why it waits, its
    complete arguments, escaped (`held_call_text`), then the question."""
    recorded = call.result if isinstance(call.result, dict) else {}
    if call.status == "in_doubt":
        reason, policy, what, choices = IN_DOUBT, "", "run it again", DOUBT_CHOICES
    else:
        reason = str(recorded.get("reason") or HELD)
        policy, what, choices = str(recorded.get("policy") or ""), "approve", HELD_CHOICES
    shown = held_call_text(call.tool, call.call_id, call.arguments, reason=reason, policy=policy)
    if call.status == "held":
        shown += HELD_HINT
    return f"{shown}{what} {escape_hidden(call.tool)} [{escape_hidden(call.call_id)}]? {choices} "


def ask_about(calls: list[Any], answers: Answers, check: EditCheck) -> None:
    """Ask at the terminal about each call waiting for a decision (held, in doubt) not decided
    on the command line; `check` says why an edit is refused (None: it is taken)."""
    for call in calls:
        if call.status in ("held", "in_doubt") and not answers.decided(call):
            _ask_until_decided(call, answers, check)
    print("", file=sys.stderr, end="")


def _ask_until_decided(call: Any, answers: Answers, check: EditCheck) -> None:
    """Ask about one call until the answer is a decision (a refused edit, an empty reply ask
    again). The end of input answers no, at any prompt."""
    while True:
        answer = _read(question_text(call)) or ""
        if call.status == "held" and is_respond(answer):
            reply = _read(RESPOND_PROMPT)
            if reply is None:
                answers.deny.append(call.call_id)
                return
            if reply.strip():
                answers.responses[call.call_id] = reply.strip()
                return
            print(f"{call.call_id}: no reply given; asking again", file=sys.stderr)
            continue
        if call.status != "held" or not is_edit(answer):
            yes = answer.strip().lower() in ("y", "yes")
            (answers.approve if yes else answers.deny).append(call.call_id)
            return
        edited = _read(EDIT_PROMPT)
        if edited is None:
            answers.deny.append(call.call_id)
            return
        arguments, refused = _edit(call, edited, check)
        if refused is None:
            answers.edits[call.call_id] = arguments
            return
        print(f"{call.call_id}: edit refused: {escape_hidden(refused)}", file=sys.stderr)


def _edit(call: Any, text: str, check: EditCheck) -> tuple[dict[str, Any], str | None]:
    """The arguments typed, and why they are refused (None when they are taken)."""
    try:
        arguments = arguments_from_text(text)
    except EditTextError as exc:
        return {}, str(exc)
    return arguments, check(call, arguments)


def _read(prompt: str) -> str | None:
    """A line typed at the terminal; None when there is nothing more to read."""
    try:
        return input(prompt)
    except (EOFError, OSError):
        return None


def schema_refusal(tree: Any) -> EditCheck:
    """The check of an edit against the schema of the tree's tool the call is for."""
    from jianmu_bt.tools.argument_schema import edit_refusal

    def refusal(call: Any, arguments: dict[str, Any]) -> str | None:
        return edit_refusal(call.tool, tree.tool_named(call.tool), arguments)

    return refusal

"""Answering a run's held tool calls from the command line (`jianmu run --approve`).

A guard policy such as `approve: [deploy]` holds a call until a reviewer decides. The desk
listens for those holds and answers each once: `all` approves, `none` rejects (the agent is told
that no reviewer was available), `ask` asks the person at the terminal, after showing why the
call is held and its complete arguments, escaped (`jianmu_bt.cli.call_text`). There `e` approves
the call with other arguments, typed as one JSON object (`jianmu_bt.cli.edited_arguments`); an
edit the tree refuses (not JSON, not the tool's schema, refused by a policy) is said in one line
and the same call is asked about again. `r` answers the call in its place ("respond instead"):
it does not run, and the agent reads the reply typed next as its result (an empty reply asks
again). Questions are asked
from a thread of their own, so the run's other work goes on while the person thinks. An MCP server's
questions for a person (elicitation) go to the same desk (`jianmu_bt.cli.questions`); the
terminal holds one conversation at a time.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any, TextIO

from jianmu_bt.cli.call_text import call_line, escape_hidden, held_call_text
from jianmu_bt.cli.desks import Once, is_yes
from jianmu_bt.cli.edited_arguments import (
    EDIT_PROMPT,
    HELD_HINT,
    RESPOND_PROMPT,
    EditTextError,
    arguments_from_text,
    is_edit,
    is_respond,
)

MODES = ("ask", "all", "none")
ALREADY_DECIDED = "already decided in the viewer; the terminal's answer is not used"
NO_REVIEWER = "no reviewer was available for this run (start it with --approve ask or all)"
#: The answers a held call's question takes: yes, no (the default), edit.
CHOICES = "[y/N/e]"
#: Who decided, in the journal and the approval record.
DECIDED_BY = "terminal"


def default_mode(stdin: TextIO | None = None) -> str:
    """`ask` when a person can answer on the terminal, else `none`."""
    stdin = stdin or sys.stdin
    return "ask" if stdin is not None and stdin.isatty() else "none"


class ApprovalDesk:
    """An event subscriber that answers held calls (`guard.decision` events with `pending`)."""

    def __init__(
        self,
        tree: Any,
        mode: str,
        *,
        ask: Callable[[str], str] = input,
        out: TextIO | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"--approve must be one of {', '.join(MODES)}, got {mode!r}")
        self.tree = tree
        self.mode = mode
        self.ask = ask
        self.out = out or sys.stderr
        self._once = Once()
        self._terminal = threading.Lock()  # one conversation at a time at the terminal
        # Imported here, not at the top: cli.questions loads the runtime layer, and the
        # parser of `jianmu run` (which imports this module) must load no layer
        # (tests/cli/test_cli_startup.py).
        from jianmu_bt.cli.questions import QuestionDesk

        self.questions = QuestionDesk(tree, mode, ask=ask, out=self.out, terminal=self._terminal)

    def __call__(self, event: Any) -> None:
        """Answer a held call (a pending `guard.decision` event) or a server's question
        (`input.requested`, by the question desk) once, as the mode says."""
        if event.type == "input.requested":
            self.questions(event)
            return
        if event.type != "guard.decision" or event.data.get("decision") != "pending":
            return
        call_id = event.data.get("call_id")
        if not self._once.first(call_id):
            return
        if self.mode == "all":
            described = self._describe(call_id)
            self.tree.approve(call_id, note="approved by --approve all")
            self._say(f"approved {described} (--approve all)")
        elif self.mode == "none":
            described = self._describe(call_id)
            self.tree.reject(call_id, NO_REVIEWER)
            self._say(f"rejected {described}: {NO_REVIEWER}")
        else:
            threading.Thread(target=self._question, args=(call_id,), daemon=True).start()

    def _question(self, call_id: str) -> None:
        """Ask about the call until it is decided (a refused edit asks again)."""
        while True:
            answer, edit = self._answers(call_id)
            # Someone else (the viewer's page, with `run --view --approve ask`) may have decided
            # while the question was open: the first decision stands.
            if not self._still_pending(call_id):
                self._say(f"{call_id}: {ALREADY_DECIDED}")
                return
            if self._decide(call_id, answer, edit):
                return

    def _answers(self, call_id: str) -> tuple[str, str | None]:
        """The answer to the question and, after `e`, the arguments typed, after `r` the reply
        (else None). The end of input answers no, at any prompt."""
        with self._terminal:
            try:
                answer = self.ask(self._question_text(call_id))
                if is_edit(answer):
                    return answer, self.ask(EDIT_PROMPT)
                return answer, self.ask(RESPOND_PROMPT) if is_respond(answer) else None
            except (EOFError, OSError):
                return "", None

    def _decide(self, call_id: str, answer: str, edit: str | None) -> bool:
        """Respond with the reply after `r`, approve with the `edit`'s arguments after `e`, else
        approve (yes) or reject; False (having said why in one line) when the edit is refused
        or the reply empty, and the call stays held."""
        from jianmu_bt.runtime import EditRefusedError

        try:
            if edit is not None and is_respond(answer):
                if not edit.strip():
                    self._say(f"{call_id}: no reply given; asking again")
                    return False
                self.tree.respond(call_id, edit.strip(), by=DECIDED_BY)
            elif edit is not None:
                arguments = arguments_from_text(edit)
                note = "approved with edits at the terminal"
                self.tree.approve(call_id, note, arguments=arguments, by=DECIDED_BY)
            elif is_yes(answer):
                self.tree.approve(call_id, note="approved at the terminal", by=DECIDED_BY)
            else:
                self.tree.reject(call_id, "the reviewer at the terminal said no", by=DECIDED_BY)
        except (EditTextError, EditRefusedError) as exc:
            self._say(f"{call_id}: edit refused: {exc}")
            return False
        except (KeyError, ValueError):  # decided elsewhere in between
            self._say(f"{call_id}: {ALREADY_DECIDED}")
        return True

    def _still_pending(self, call_id: str) -> bool:
        return any(record.call_id == call_id for record in self.tree.pending_approvals())

    def _record(self, call_id: str) -> Any:
        """The held call's approval record (None once it is no longer pending)."""
        for record in self.tree.pending_approvals():
            if record.call_id == call_id:
                return record
        return None

    def _describe(self, call_id: str) -> str:
        """The call on one line, its arguments complete and escaped (`call_line`)."""
        record = self._record(call_id)
        if record is None:
            return escape_hidden(call_id)
        return call_line(record.tool, call_id, record.arguments)

    def _question_text(self, call_id: str) -> str:
        """What the person reads before answering: why the call is held, its complete
        arguments (`held_call_text`), then the question."""
        record = self._record(call_id)
        if record is None:
            return f"approve {escape_hidden(call_id)}? {CHOICES} "
        shown = held_call_text(
            record.tool, call_id, record.arguments, reason=record.reason, policy=record.policy
        )
        what = f"approve {escape_hidden(record.tool)} [{escape_hidden(call_id)}]"
        return f"{shown}{HELD_HINT}{what}? {CHOICES} "

    def _say(self, text: str) -> None:
        print(text, file=self.out)

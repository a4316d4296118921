"""Answering an MCP server's questions for a person (`elicitation/create`) on behalf of a run.

The `elicitation:` option of an `mcp:` entry decides (ElicitationOptions):

- `ask` (the default): the question goes to the run's desk. It is recorded in the run's
  QuestionStore (`jianmu_bt.runtime.questions`) and announced as an `input.requested` run
  event; `Tree.answer(...)` or the terminal's desk (`jianmu run --approve ask|all|none`)
  answers it. Content is checked against the server's form before it is sent; a question
  nobody answers within `timeout` seconds is declined, and so is every question while no desk
  attends the run's questions (`jianmu batch`, `jianmu mcp serve`, the viewer, a plain
  `tree.run()`). A question still open when the run ends or halts is withdrawn (`cancel`).
- `decline`: every question is declined at once (unattended runs).
- `off`: the capability is not declared at all (no callback).

Every outcome is an `input.answered` run event (with the server's name and the reason). A server
gets at most `max_requests` questions answered per run; after that it is refused with an error
that says how to raise the limit (`input.refused`). One question per server is open at a time
(the next waits its turn), and while a question is open the server's calls in flight do not
time out (`MCPClient.deadlines`): a person may take longer than a call's `timeout`.

URL-mode elicitation (send the person to a web page) is declined with a reason: a run has no
browser to open and no way to learn that the page was completed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio

from jianmu_bt.runtime.question_forms import question_problem
from jianmu_bt.runtime.questions import questions_of

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.client.session import ClientRequestContext, ElicitationFnT

    from jianmu_bt.mcp.client import MCPClient

logger = logging.getLogger(__name__)

NO_RUN = "no run to ask: the client is not attached to a tree's run"
NOBODY = (
    "nobody attends this run's questions (answer them with `jianmu run --approve ask` or "
    "`Tree.attend_questions()`); declined at once"
)
WITHDRAWN = "withdrawn: the run ended while the question waited for its turn"
#: Characters of a server's message written to the log.
LOG_CHARS = 200
POLICY = "declined by policy (`elicitation: decline` for this server)"
URL_MODE = (
    "URL-mode elicitation is not supported: a run cannot open the page for a person nor learn "
    "that it was completed"
)


class RunElicitation:
    """The elicitation callback of one client for one run (see the module docstring)."""

    def __init__(self, client: MCPClient, run: Any | None) -> None:
        self.client = client
        self.run = run
        self.options = client.config.elicitation
        self._asked = 0  # rebuilt for each run (`attach_run`): a plain count per run
        self._turn = anyio.Lock()  # one open question per server

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """Answer one `elicitation/create` request: refused past `max_requests`, declined when
        it cannot be asked (URL mode, policy, no run, nobody attending, an unusable form), else
        asked at the run's desk, one question at a time, and answered as the desk says."""
        import mcp_types as types

        server = self.client.name
        limit = self.options.max_requests
        if self._asked >= limit:
            reason = (
                f"MCP server '{server}' asked more than {limit} question(s) in this run; refused "
                f"(raise `elicitation: {{max_requests: N}}` in its `mcp:` entry to allow more)"
            )
            self._emit("input.refused", server=server, reason=reason)
            logger.warning("%s", reason)
            return types.ErrorData(code=types.INVALID_REQUEST, message=reason)
        self._asked += 1
        message = params.message
        if params.mode == "url":
            return self._decline(server, URL_MODE)
        if self.options.mode == "decline":
            return self._decline(server, POLICY)
        if self.run is None:
            return self._decline(server, NO_RUN)
        problem = question_problem(message, params.requested_schema)
        if problem:
            return self._decline(server, f"unusable question: {problem}")
        store = questions_of(self.run)
        if not store.attended:
            return self._decline(server, NOBODY)
        run_id = str(getattr(self.run, "run_id", ""))
        withdrawals = store.withdrawals
        question = None
        try:
            async with self._turn:
                if store.withdrawals != withdrawals:  # the run ended while this one queued
                    self._emit(
                        "input.answered", server=server, action="cancel", reason=WITHDRAWN, by="run"
                    )
                    return types.ElicitResult(action="cancel")
                with self.client.deadlines.held():  # a person's time does not count
                    question = store.ask(server, message, params.requested_schema, run_id)
                    self._emit("input.requested", **question.to_dict())
                    logger.info(
                        "MCP server '%s' asks the user: %s (question %s; declined unless "
                        "answered within %gs)",
                        server,
                        _cut(message),
                        question.id,
                        self.options.timeout,
                    )
                    answer = await store.wait(question, self.options.timeout)
        finally:  # answered, timed out, or withdrawn (the request was cancelled, the run ended)
            if question is not None and question.answer is not None:
                self._emit("input.answered", **question.outcome())
        return types.ElicitResult(action=answer.action, content=answer.content)

    def _decline(self, server: str, reason: str) -> types.ElicitResult:
        import mcp_types as types

        self._emit("input.answered", server=server, action="decline", reason=reason, by="policy")
        return types.ElicitResult(action="decline")

    def _emit(self, kind: str, **data: Any) -> None:
        if self.run is not None:
            self.run.events.emit(kind, **data)


def _cut(text: str) -> str:
    """A server's message for the log: one line of at most LOG_CHARS characters, with what is
    not printable escaped (a log may be read on a terminal)."""
    line = " ".join(text[: LOG_CHARS * 2].split())
    line = line if len(line) <= LOG_CHARS else line[: LOG_CHARS - 3] + "..."
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in line)


def elicitation_callback(client: MCPClient, run: Any | None) -> ElicitationFnT | None:
    """The SDK elicitation callback for `client` in `run` (a RunContext, or None), or None when
    the config says `elicitation: off` (the capability is then not declared)."""
    if client.config.elicitation.mode == "off":
        return None
    return RunElicitation(client, run)


__all__ = ["RunElicitation", "elicitation_callback"]

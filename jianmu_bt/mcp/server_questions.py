"""A served run's questions asked to the MCP client (elicitation, from the server's side).

While `build_mcp_server` runs a call (`run_call`), the way to ask the client of that request
lives in a context variable of its own (`asking_client`); a tool reads it with `client_asker()`.
It is None when the client cannot be asked: it declared no form elicitation capability, or the
request has no back-channel for a server's request (the 2026-07-28 protocol carries a server's
questions only inside a call's result, `InputRequiredResult`, which a served run does not use).

`while_asking(tree, ask, work)` runs `work()` (a run of `tree`) while attending the tree's
questions: each question of the tree's own `ask` steps (`source == "tree"`) is sent to the client
as `elicitation/create` (form mode: the question's message and form), and the client's answer
goes back to the tree (`tree.answer(..., by="mcp client")`): accept with its content, decline,
cancel. Content the question's form refuses, or a client that fails to answer, is a decline
with the reason. The questions are asked in tasks that end with `work` (or its cancellation):
a question still open then is withdrawn by the run, and its request to the client is cancelled.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio

from jianmu_bt.runtime.context import LoopHandle
from jianmu_bt.runtime.questions import AnswerError, Question, UnknownQuestionError

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Who answered, in the tree's records (journal, `input.answered` events).
ANSWERED_BY = "mcp client"


@dataclass(frozen=True, slots=True)
class ClientReply:
    """What the client answered: `accept` (with `content`), `decline` or `cancel`."""

    action: str
    content: dict[str, Any] | None = None


AskClient = Callable[[str, Mapping[str, Any]], Awaitable[ClientReply]]
"""Asks the client's user `(message, form)`; returns the reply (raises when it cannot)."""

_ASK: ContextVar[AskClient | None] = ContextVar("jianmu_ask_client", default=None)


def client_asker() -> AskClient | None:
    """How to ask the client of the MCP request being served, or None (see the module
    docstring)."""
    return _ASK.get()


@contextmanager
def asking_client(ask: AskClient | None) -> Iterator[None]:
    """Make `ask` the way to ask the client for calls run in this context until the block
    ends."""
    token = _ASK.set(ask)
    try:
        yield
    finally:
        _ASK.reset(token)


def session_asker(ctx: Any) -> AskClient | None:
    """How to ask the client of the request `ctx` (an SDK server request context) through form
    elicitation, or None when its client declared no form elicitation or the request cannot
    carry a server's request back (no back-channel)."""
    session: Any = getattr(ctx, "session", None)
    if session is None:
        return None
    capabilities = getattr(session, "client_capabilities", None)
    elicitation = getattr(capabilities, "elicitation", None)
    # An empty `elicitation: {}` means form mode (the 2025-06-18 shape); a client that names
    # modes must name `form`.
    if elicitation is None or (elicitation.form is None and elicitation.url is not None):
        return None
    if not getattr(session, "can_send_request", False):
        return None
    related = getattr(ctx, "request_id", None)

    async def ask(message: str, form: Mapping[str, Any]) -> ClientReply:
        result = await session.elicit_form(message, dict(form), related)
        content = dict(result.content) if result.content is not None else None
        return ClientReply(str(result.action), content)

    return ask


async def while_asking(tree: Any, ask: AskClient | None, work: Callable[[], Awaitable[T]]) -> T:
    """`await work()` while the tree's own questions go to the client through `ask`; without
    `ask`, nobody attends them (a durable run pauses, another takes the default or fails)."""
    if ask is None:
        return await work()
    loop = LoopHandle()
    error: Exception | None = None
    async with anyio.create_task_group() as group:

        def on_question(question: Question) -> None:
            if question.source == "tree":
                loop.call_soon(lambda: group.start_soon(_forward, tree, ask, question))

        try:
            with tree.attend_questions(on_question, in_process=True):
                outcome = await work()
        except Exception as exc:  # raised below, unwrapped by the task group
            error = exc
        finally:
            group.cancel_scope.cancel()  # the run ended: nothing is asked any more
    if error is not None:
        raise error
    return outcome


async def _forward(tree: Any, ask: AskClient, question: Question) -> None:
    """Ask one question to the client and answer the tree with the reply."""
    try:
        reply = await ask(question.message, question.schema)
    except Exception as exc:
        logger.warning("the MCP client could not be asked question %s: %r", question.id, exc)
        _decline(tree, question, f"the MCP client could not be asked: {exc}")
        return
    accepted = reply.action == "accept"
    content = (reply.content or {}) if accepted else None
    reason = "" if accepted else f"the MCP client answered '{reply.action}'"
    try:
        tree.answer(question.id, reply.action, content, reason=reason, by=ANSWERED_BY)
    except UnknownQuestionError:
        return
    except AnswerError as exc:
        _decline(tree, question, f"the MCP client's answer was refused: {exc}")


def _decline(tree: Any, question: Question, reason: str) -> None:
    """Decline a question that is still open (closed meanwhile: nothing to do)."""
    if not question.pending:
        return
    with contextlib.suppress(AnswerError, UnknownQuestionError):  # closed since the look
        tree.answer(question.id, "decline", reason=reason, by=ANSWERED_BY)


__all__ = [
    "ANSWERED_BY",
    "AskClient",
    "ClientReply",
    "asking_client",
    "client_asker",
    "session_asker",
    "while_asking",
]

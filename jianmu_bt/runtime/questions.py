"""QuestionStore: a run's questions for a person, and their answers (MCP elicitation).

An MCP server may ask the run's user for input (`elicitation/create`): a message and a flat form
(`jianmu_bt.runtime.question_forms`). The asker records the question here and waits; a desk
answers it: `Tree.answer(question_id, action, content)` from any thread, or the terminal's desk
of `jianmu run --approve ask|all|none`. An answer is `accept` with content (validated against
the form: invalid content is refused with the reasons and the question stays open, so it can
be answered again), `decline` or `cancel`. A question nobody answers within its timeout is
declined; one whose asker was cancelled, or still open when the run ends or halts
(`withdraw_pending`), is closed as `cancel`.

Someone must attend the questions: a desk registers with `attend()` for as long as it answers
(the CLI's desk, `Tree.attend_questions()`). With nobody attending, an asker declines at once
instead of waiting out the timeout (`attended`), so unattended runs never stall on a question.

The store is thread-safe: answers come from other threads (a terminal, a web handler) while the
asker waits in the run's event loop, which the answer wakes through a `LoopHandle`.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from jianmu_bt.runtime.context import LoopHandle
from jianmu_bt.runtime.question_forms import content_problems

Action = Literal["accept", "decline", "cancel"]
ACTIONS: tuple[Action, ...] = ("accept", "decline", "cancel")
#: Where a run keeps its store (`RunContext.services`).
SERVICE_NAME = "questions"
#: Closed questions kept for look-ups (the oldest go first), so a long-lived tree stays small.
KEEP_CLOSED = 200


class UnknownQuestionError(KeyError):
    """No question has this id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class AnswerError(ValueError):
    """An answer that cannot be taken: the question is closed, or the action or content is
    invalid (the message says which; an open question stays open)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """How a question was answered: the action, the content (accept only), why, and by whom."""

    action: Action
    content: dict[str, Any] | None = None
    reason: str = ""
    by: str = ""


@dataclass(slots=True)
class Question:
    """One question: its id, the server that asks, the message, the form (a JSON Schema) and,
    once closed, its answer."""

    id: str
    server: str
    message: str
    schema: dict[str, Any]
    run_id: str = ""
    asked: float = field(default_factory=time.time)
    answer: Answer | None = None
    #: Who asks: "mcp" (a server's elicitation; `server` is its name) or "tree" (an `ask` step
    #: of the tree; `server` is the step's name).
    source: str = "mcp"
    #: The form's one field that holds the answer, when the answer is not an object (a choice,
    #: a number, text): `content_of` wraps a plain value in it.
    answer_field: str | None = None

    def content_of(self, value: Any) -> dict[str, Any]:
        """The form content that answers this question with `value` (a plain value, wrapped
        in `answer_field` when the question has one; else the form's fields)."""
        if self.answer_field is not None:
            return {self.answer_field: value}
        if not isinstance(value, Mapping):
            raise AnswerError(f"question {self.id} takes an object of its form's fields")
        return dict(value)

    @property
    def pending(self) -> bool:
        """True until the question is answered, declined or withdrawn."""
        return self.answer is None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view of the question (the data of its `input.requested` event)."""
        return {
            "question_id": self.id,
            "server": self.server,
            "message": self.message,
            "schema": self.schema,
            "run_id": self.run_id,
            "source": self.source,
        }

    def outcome(self) -> dict[str, Any]:
        """How it was closed, without repeating the question (an `input.answered` event's data)."""
        answered = self.answer
        return {
            "question_id": self.id,
            "server": self.server,
            "action": answered.action if answered else None,
            "reason": answered.reason if answered else "",
            "by": answered.by if answered else "",
        }


class QuestionStore:
    """The questions of one tree's runs: `ask`, `wait` (the asker), `answer`, `pending`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._questions: dict[str, Question] = {}
        self._wakers: dict[str, Callable[[], None]] = {}
        self._attending = 0
        self._in_process = 0
        #: How many times open questions were withdrawn: an asker still waiting for its turn
        #: when this changes is withdrawn too.
        self.withdrawals = 0

    @property
    def attended(self) -> bool:
        """Whether a desk answers the questions now (see `attend`)."""
        return self._attending > 0

    @property
    def attended_in_process(self) -> bool:
        """Whether a desk answers the tree's own questions in this process even in a run that
        pauses for its held calls (see `attend`)."""
        return self._in_process > 0

    @contextmanager
    def attend(self, *, in_process: bool = False) -> Iterator[QuestionStore]:
        """Register a desk that answers questions for as long as the block lasts (desks add up);
        without one, askers decline at once. `in_process`: the desk answers the tree's `ask`
        steps here even when the run pauses on held calls (`hold="pause"`), as a served run's
        client does."""
        with self._lock:
            self._attending += 1
            self._in_process += in_process
        try:
            yield self
        finally:
            with self._lock:
                self._attending -= 1
                self._in_process -= in_process

    def withdraw_pending(self, reason: str, by: str = "run") -> list[Question]:
        """Close every open question as `cancel` with `reason` (the run ended or halted); their
        askers wake and tell their servers. Returns the questions withdrawn."""
        with self._lock:
            self.withdrawals += 1
        withdrawn = [
            question
            for question in self.pending()
            if self._close(question, Answer("cancel", None, reason, by)) is None
        ]
        return withdrawn

    def ask(
        self,
        server: str,
        message: str,
        schema: Mapping[str, Any],
        run_id: str = "",
        *,
        question_id: str | None = None,
        source: str = "mcp",
        answer_field: str | None = None,
    ) -> Question:
        """Record a new open question and return it (`question_id`: a durable run's own id
        for it, the same in every process of the run)."""
        question_id = question_id or f"q_{uuid.uuid4().hex[:12]}"
        question = Question(
            question_id,
            server,
            message,
            dict(schema),
            run_id,
            source=source,
            answer_field=answer_field,
        )
        with self._lock:
            closed = [key for key, known in self._questions.items() if not known.pending]
            for key in closed[: max(0, len(closed) - KEEP_CLOSED)]:
                del self._questions[key]
            self._questions[question.id] = question
        return question

    def get(self, question_id: str) -> Question:
        """The question with this id (UnknownQuestionError when there is none)."""
        with self._lock:
            question = self._questions.get(question_id)
        if question is None:
            raise UnknownQuestionError(f"no question has the id {question_id!r}")
        return question

    def pending(self) -> list[Question]:
        """The open questions, oldest first."""
        with self._lock:
            return [question for question in self._questions.values() if question.pending]

    def answer(
        self,
        question_id: str,
        action: str,
        content: Mapping[str, Any] | None = None,
        *,
        reason: str = "",
        by: str = "api",
    ) -> Question:
        """Answer an open question; the asker wakes. `accept` needs `content` that fits the
        form; `decline` and `cancel` take none. Raises UnknownQuestionError or AnswerError."""
        if action not in ACTIONS:
            raise AnswerError(f"the action must be one of {', '.join(ACTIONS)}, got {action!r}")
        question = self.get(question_id)
        if action == "accept":
            problems = content_problems(question.schema, {} if content is None else content)
            if problems:
                raise AnswerError(
                    f"the answer to question {question_id} does not fit its form: "
                    + "; ".join(problems)
                )
        elif content is not None:
            raise AnswerError(f"a '{action}' answer takes no content (only 'accept' does)")
        fixed: Action = action  # checked against ACTIONS above (a Literal narrowing)
        data = dict(content) if action == "accept" and content is not None else None
        closed = self._close(question, Answer(fixed, data, reason, by))
        if closed is not None:
            raise AnswerError(
                f"question {question_id} is already closed ({closed.action}"
                + (f": {closed.reason})" if closed.reason else ")")
            )
        return question

    async def wait(self, question: Question, timeout: float) -> Answer:
        """Wait (in the event loop) until `question` is answered, at most `timeout` seconds;
        then it is declined. When the waiting is cancelled, the question is closed as `cancel`
        and the cancellation goes on."""
        woken = anyio.Event()
        loop = LoopHandle()
        with self._lock:
            self._wakers[question.id] = lambda: loop.call_soon(woken.set)
        try:
            if question.pending:  # an answer may have come before the waker was in place
                with anyio.move_on_after(timeout):
                    await woken.wait()
        except BaseException:
            self._close(question, Answer("cancel", None, "withdrawn: the request was cancelled"))
            raise
        finally:
            with self._lock:
                self._wakers.pop(question.id, None)
        self._close(question, Answer("decline", None, f"no answer within {timeout:g}s", "timeout"))
        assert question.answer is not None
        return question.answer

    def _close(self, question: Question, answer: Answer) -> Answer | None:
        """Give an open question its answer and wake its asker; returns the earlier answer of
        a question that was already closed (and changes nothing then)."""
        with self._lock:
            if question.answer is not None:
                return question.answer
            question.answer = answer
            waker = self._wakers.pop(question.id, None)
        if waker is not None:
            waker()
        return None


def questions_of(run: Any) -> QuestionStore:
    """The question store of a run (a RunContext), made on first use."""
    store = run.service(SERVICE_NAME, QuestionStore)
    assert isinstance(store, QuestionStore)
    return store


def withdraw_open_questions(run: Any, reason: str) -> None:
    """Withdraw a run's open questions (see QuestionStore.withdraw_pending), if it has a
    question store at all (none is made for it)."""
    store = run.services.get(SERVICE_NAME)
    if store is not None:
        store.withdraw_pending(reason)


__all__ = [
    "ACTIONS",
    "Answer",
    "AnswerError",
    "Question",
    "QuestionStore",
    "UnknownQuestionError",
    "questions_of",
    "withdraw_open_questions",
]

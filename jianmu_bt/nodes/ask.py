"""Asking a person a question and going on with the answer: the `ask` step, and `ask_person`.

A question has a text (a template over state), an answer schema (JSON Schema: a choice
`{type: string, enum: [...]}`, a number, a form of fields `{type: object, properties: ...}`,
free text by default) and the state field the answer goes to. Every desk asks it as a flat
form (`question_forms.answer_form`): the terminal, the viewer, Python (`Tree.answer`), MCP
elicitation when the tree is served over MCP.

- While someone attends the tree's questions (`Tree.attend_questions`, `jianmu run`'s desk,
  the viewer) the run waits in its process for the answer.
- A durable run journals the question `waiting` first, with its deadline; with nobody attending
  (or with `hold="pause"`: `jianmu run --approve later`) it pauses (exit 3) until a resume
  brings the answer (`jianmu resume RUN --answer QUESTION_ID=JSON`, `Tree.resume(...,
  answers=...)`). The answer is checked against the schema and journaled `done` before the run
  goes on: a resumed run never asks twice, and a crash never loses an answer.
- A run that is not durable, with nobody attending, takes the default at once (or fails).
- After `timeout` seconds without an answer the question takes its default, or the step fails;
  a person who declines fails it too (with their reason).

From a node of your own, `await ask_person(self.context, self.node_key, self.name, "Which
plan?", {"type": "string", "enum": ["A", "B"]})` returns the answer as a ToolResult.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Mapping
from typing import Any

from py_trees.common import Status

from jianmu_bt.nodes import journaled
from jianmu_bt.runtime.async_node import AsyncNode
from jianmu_bt.runtime.context import RunContext
from jianmu_bt.runtime.outside import (
    QUESTION_TOOL,
    WAITING,
    SuppliedResult,
    deadline_after,
    expired,
    timed_out_result,
    waiting_document,
)
from jianmu_bt.runtime.question_forms import (
    ANSWER_FIELD,
    FREE_TEXT,
    answer_form,
    answer_schema_problem,
)
from jianmu_bt.runtime.questions import questions_of
from jianmu_bt.runtime.state_schema import StateValidationError
from jianmu_bt.runtime.templates import TemplateError, references, render
from jianmu_bt.tools import ToolCall, ToolResult, new_call_id
from jianmu_bt.tools.external import NO_DEFAULT

__all__ = ["Ask", "ask_person", "question_id"]

NOBODY = "nobody attends the run's questions and the run is not durable, so none can be asked"


async def ask_person(
    context: RunContext,
    node_key: str,
    asker: str,
    question: str,
    schema: Mapping[str, Any] | None = None,
    *,
    default: Any = NO_DEFAULT,
    timeout: float | None = None,
) -> ToolResult:
    """Ask `question` (answer `schema`, free text by default) on behalf of the node `node_key`
    (shown as `asker`); the answer is the result's output (see the module docstring)."""
    schema = dict(schema or FREE_TEXT)
    problem = answer_schema_problem(schema)
    if problem:
        return ToolResult.failure(QUESTION_TOOL, f"Error: cannot ask {question!r}: {problem}")
    journal = context.journal
    arguments = {"question": question, "schema": schema}
    fresh = waiting_document(
        "question",
        schema=schema,
        deadline=deadline_after(timeout),
        default=default,
        question=question,
    )
    if journal is None:
        call = ToolCall(QUESTION_TOOL, arguments, new_call_id())
        return await _answer(context, asker, call, fresh, schema, None)
    key = journal.next_key(node_key)
    call = ToolCall(QUESTION_TOOL, arguments, question_id(key))
    digest = journaled.call_digest(call)
    write = functools.partial(journaled.entry, journal, key, node_key, call, None, digest=digest)
    record = journal.recorded(key)
    if record is not None:
        journaled.check_matches(journal, record, call, digest)
        if journaled.is_finished(record):
            return journaled.recorded_result(record)
    if record is None or record.status != WAITING:
        journal.write(write(WAITING, decision=fresh))  # at once: a crash keeps it asked
        document = fresh
    else:
        document = dict(record.result or {})
    result = await _answer(context, asker, call, document, schema, journal)
    journal.write(write("done" if result.ok else "failed", result))  # before the run goes on
    return result


def question_id(key: str) -> str:
    """The id of a durable run's question, the same in every process of the run."""
    return "q_" + journaled.step_call_id(key).removeprefix("call_")


async def _answer(
    context: RunContext,
    asker: str,
    call: ToolCall,
    document: dict[str, Any],
    schema: dict[str, Any],
    journal: Any,
) -> ToolResult:
    what = f"question {call.id}"
    if expired(document):
        return timed_out_result(QUESTION_TOOL, document, what)
    store = questions_of(context)
    pausing = journal is not None and journal.hold == "pause" and not store.attended_in_process
    if journal is not None and (pausing or not store.attended):
        context.events.emit(
            "input.waiting", node=asker, question_id=call.id, message=call.arguments["question"]
        )
        journal.request_pause(f"{what} waits for an answer (jianmu resume --answer)")
        await journal.wait_for_halt()
    if not store.attended:
        return timed_out_result(QUESTION_TOOL, document, f"{what} ({NOBODY})")
    default = document.get("default")
    form, wrapped = answer_form(schema, default[0] if isinstance(default, list) else None)
    question = store.ask(
        asker,
        call.arguments["question"],
        form,
        context.run_id,
        question_id=call.id,
        source="tree",
        answer_field=ANSWER_FIELD if wrapped else None,
    )
    context.events.emit("input.requested", node=asker, **question.to_dict())
    deadline = document.get("deadline")
    left = math.inf if deadline is None else max(0.0, deadline - time.time())
    try:
        answer = await store.wait(question, left)
    finally:
        if question.answer is not None:
            context.events.emit("input.answered", node=asker, **question.outcome())
    if answer.action == "accept":
        content = answer.content or {}
        value = content.get(ANSWER_FIELD) if wrapped else content
        return SuppliedResult(QUESTION_TOOL, True, value, None, by=answer.by)
    if answer.by == "timeout":
        return timed_out_result(QUESTION_TOOL, document, what)
    reason = f": {answer.reason}" if answer.reason else ""
    return ToolResult.failure(QUESTION_TOOL, f"Error: {what} was {answer.action}d{reason}")


class Ask(AsyncNode):
    """A tree step that asks a person a question and writes the answer to `output_key`:
    SUCCESS once answered, FAILURE when declined or unanswered in time with no default.

    `question` may refer to state fields (`"Deploy {version}?"`); `schema` is the answer's
    JSON Schema (free text when None); `default` is taken after `timeout` seconds, or at once
    when nobody can be asked.
    """

    def __init__(
        self,
        name: str,
        question: str,
        schema: Mapping[str, Any] | None = None,
        output_key: str | None = None,
        *,
        default: Any = NO_DEFAULT,
        timeout: float | None = None,
    ) -> None:
        super().__init__(name=name)
        self.question = question
        self.schema = dict(schema or FREE_TEXT)
        problem = answer_schema_problem(self.schema)
        if problem:
            raise ValueError(f"ask step '{name}': {problem}")
        self.output_key = output_key
        self.default = default
        self.wait_timeout = timeout

    @property
    def reads(self) -> frozenset[str]:
        """The state fields the question refers to."""
        return frozenset(references(self.question))

    @property
    def writes(self) -> frozenset[str]:
        """The state field the answer goes to."""
        return frozenset({self.output_key} if self.output_key else ())

    async def run_async(self) -> Status:
        """Ask, wait for the answer, write it."""
        assert self.context is not None
        try:
            text = str(render(self.question, self.state.get))
        except TemplateError as exc:
            self.feedback_message = str(exc)
            return Status.FAILURE
        self.feedback_message = "waiting for an answer"
        result = await ask_person(
            self.context,
            self.node_key,
            self.name,
            text,
            self.schema,
            default=self.default,
            timeout=self.wait_timeout,
        )
        if not result.ok:
            self.feedback_message = result.error or "no answer"
            return Status.FAILURE
        self.feedback_message = ""
        if self.output_key:
            try:
                self.state.update({self.output_key: result.output})
            except StateValidationError as exc:
                self.feedback_message = str(exc)
                return Status.FAILURE
        return Status.SUCCESS

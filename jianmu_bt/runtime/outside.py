"""Steps answered from outside the run: questions for a person and calls of external tools.

An `ask` step (a question with an answer schema) and a call of an external tool
(`jianmu_bt.tools.external.ExternalTool`) both wait for a value that only someone outside the
run can give. A durable run journals such a step as `waiting` before it waits; the row's
result document says what waits (`waiting_document`): a question (its text and answer schema)
or an external call (the output schema), a deadline when it has a timeout, and a default.

The value comes either while the run waits in its process (a desk answers a question, or
`Tree.supply_result` gives a call's result: `ExternalCalls` below) or, once the run has paused,
with the resume (`supplied_rows`: `jianmu resume RUN --answer Q=JSON --result CALL=JSON`). Either
way it is checked against the schema first (a value that does not fit is refused with the
schema's error and the step keeps waiting) and journaled `done` before the run goes on, so a
resumed run never asks twice and a value is applied once. Past its deadline a step takes its
default, or fails; a value given after that is refused.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from jianmu_bt.runtime.context import LoopHandle
from jianmu_bt.store import JournalEntry
from jianmu_bt.tools import ToolCall, ToolResult
from jianmu_bt.tools.external import NO_DEFAULT, value_problems

#: The journal status of a step that waits for a value from outside.
WAITING = "waiting"
#: The tool name a question's journal rows carry.
QUESTION_TOOL = "ask"
#: Where a run keeps its live external calls (`RunContext.services`).
SERVICE_NAME = "external_calls"

Waits = Literal["question", "external"]


class OutsideValueError(ValueError):
    """A value that cannot be taken for a waiting step (the message says which and why)."""


def deadline_after(timeout: float | None, now: float | None = None) -> float | None:
    """The wall-clock time a wait of `timeout` seconds ends (None: no deadline)."""
    return None if timeout is None else (time.time() if now is None else now) + timeout


def waiting_document(
    waits: Waits,
    *,
    schema: Mapping[str, Any] | None,
    deadline: float | None,
    default: Any = NO_DEFAULT,
    question: str | None = None,
) -> dict[str, Any]:
    """The result document of a `waiting` row: what waits, for what, until when."""
    document: dict[str, Any] = {"waiting": waits, "schema": schema, "deadline": deadline}
    if question is not None:
        document["question"] = question
    if default is not NO_DEFAULT:
        document["default"] = [default]  # a list: a default of None is still a default
    return document


def expired(document: Mapping[str, Any] | None, now: float | None = None) -> bool:
    """True when the waiting step's deadline has passed."""
    deadline = (document or {}).get("deadline")
    return deadline is not None and (time.time() if now is None else now) >= deadline


def timed_out_result(tool: str, document: Mapping[str, Any], what: str) -> ToolResult:
    """The result of a step whose deadline passed: its default, or a failure saying so."""
    default = document.get("default")
    if isinstance(default, list) and default:
        return ToolResult(tool, True, default[0])
    return ToolResult.failure(tool, f"Error: {what} got no value before its timeout")


def supplied_document(tool: str, value: Any, by: str) -> dict[str, Any]:
    """The result document of a `done` row whose value came from outside, and who gave it."""
    return {"tool": tool, "ok": True, "output": value, "error": None, "by": by}


def supplied_rows(
    run_id: str,
    journal: list[JournalEntry],
    answers: Mapping[str, Any],
    results: Mapping[str, Any],
    by: str,
    now: float | None = None,
) -> list[JournalEntry]:
    """`done` rows for the answers (question id -> value) and results (call id -> value) given
    for the run's waiting steps (`journal`: the latest row of each step); OutsideValueError for
    an id that does not wait (unknown, already answered), one past its deadline, or a value that
    does not fit the step's schema."""
    rows = []
    kinds: tuple[tuple[Mapping[str, Any], Waits], ...] = (
        (answers, "question"),
        (results, "external"),
    )
    for values, waits in kinds:
        for step_id, value in values.items():
            entry = _waiting_step(run_id, journal, step_id, waits)
            document = entry.result or {}
            noun = "question" if waits == "question" else "call"
            if expired(document, now):
                raise OutsideValueError(
                    f"{noun} {step_id} of run {run_id} timed out before this value came; "
                    "resume the run without it to take its default (or its failure)"
                )
            label = "answer" if waits == "question" else "result"
            problems = value_problems(document.get("schema"), value, label)
            if problems:
                raise OutsideValueError(
                    f"the value for {noun} {step_id} does not fit its schema: "
                    + "; ".join(problems)
                )
            result = supplied_document(entry.tool, value, by)
            rows.append(
                dataclasses.replace(entry, status="done", result=result, position=0, created=0.0)
            )
    return rows


def _waiting_step(
    run_id: str, journal: list[JournalEntry], step_id: str, waits: Waits
) -> JournalEntry:
    def names(entry: JournalEntry) -> bool:
        return step_id in (entry.call_id, entry.key)

    waiting = [
        e for e in journal if e.status == WAITING and (e.result or {}).get("waiting") == waits
    ]
    found = next((e for e in waiting if names(e)), None)
    if found is not None:
        return found
    noun = "question" if waits == "question" else "external call"
    earlier = next((e for e in journal if names(e)), None)
    if earlier is not None and earlier.status in ("done", "failed"):
        raise OutsideValueError(f"{noun} {step_id} of run {run_id} already has its value")
    listed = ", ".join(f"{e.call_id} ({e.tool})" for e in waiting)
    raise OutsideValueError(
        f"run {run_id} has no {noun} {step_id!r} waiting; waiting: {listed or 'none'}"
    )


# --- live external calls ------------------------------------------------------------------


@dataclass(slots=True)
class WaitingCall:
    """A call of an external tool that waits in this process for its result."""

    call_id: str
    tool: str
    arguments: Any
    schema: dict[str, Any] | None
    deadline: float | None
    run_id: str = ""
    node: str = ""
    handed_out: float = field(default_factory=time.time)
    result: ToolResult | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (the data of a `tool.call.waiting` event, whose node is `node`)."""
        return {
            "call_id": self.call_id,
            "tool": self.tool,
            "arguments": self.arguments,
            "schema": self.schema,
            "deadline": self.deadline,
            "run_id": self.run_id,
        }


class ExternalCalls:
    """The external calls of one tree's runs that wait in this process: `wait` (the node),
    `supply` (anyone, from any thread), `pending`; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[str, WaitingCall] = {}
        self._wakers: dict[str, Callable[[], None]] = {}
        self._attending = 0

    @property
    def attended(self) -> bool:
        """Whether someone in this process supplies results now (see `attend`)."""
        return self._attending > 0

    @contextmanager
    def attend(self) -> Iterator[ExternalCalls]:
        """Register a supplier of results for the block: a durable run then waits for them in
        this process instead of pausing."""
        with self._lock:
            self._attending += 1
        try:
            yield self
        finally:
            with self._lock:
                self._attending -= 1

    def pending(self) -> list[WaitingCall]:
        """The calls waiting for their results, oldest first."""
        with self._lock:
            return [c for c in self._calls.values() if c.result is None]

    def supply(self, call_id: str, value: Any, *, by: str = "api") -> WaitingCall:
        """Give a waiting call its result (checked against the tool's output schema); the run
        goes on. OutsideValueError when no such call waits or the value does not fit."""
        with self._lock:
            waiting = self._calls.get(call_id)
        if waiting is None or waiting.result is not None:
            listed = ", ".join(c.call_id for c in self.pending())
            raise OutsideValueError(
                f"no external call {call_id!r} waits for a result; waiting: {listed or 'none'}"
            )
        problems = value_problems(waiting.schema, value)
        if problems:
            raise OutsideValueError(
                f"the result for call {call_id} does not fit {waiting.tool}'s output schema: "
                + "; ".join(problems)
            )
        if not self._close(waiting, SuppliedResult(waiting.tool, True, value, None, by=by)):
            raise OutsideValueError(f"external call {call_id} already has its result")
        return waiting

    async def wait(
        self, waiting: WaitingCall, announce: Callable[[], None] | None = None
    ) -> ToolResult | None:
        """Wait (in the event loop) for the call's result until its deadline; None when the
        deadline came first. `announce()` runs once the call can be supplied (a result given
        from it is taken). A cancelled wait drops the call and the cancellation goes on."""
        woken = anyio.Event()
        loop = LoopHandle()
        with self._lock:
            self._calls[waiting.call_id] = waiting
            self._wakers[waiting.call_id] = lambda: loop.call_soon(woken.set)
        try:
            if announce is not None:
                announce()
            if waiting.result is not None:
                pass  # supplied while it was announced
            elif waiting.deadline is None:
                await woken.wait()
            else:
                with anyio.move_on_after(max(0.0, waiting.deadline - time.time())):
                    await woken.wait()
        finally:
            with self._lock:
                self._wakers.pop(waiting.call_id, None)
                self._calls.pop(waiting.call_id, None)
        return waiting.result

    def _close(self, waiting: WaitingCall, result: ToolResult) -> bool:
        with self._lock:
            if waiting.result is not None:
                return False
            waiting.result = result
            waker = self._wakers.pop(waiting.call_id, None)
        if waker is not None:
            waker()
        return True


@dataclass(frozen=True, slots=True)
class SuppliedResult(ToolResult):
    """A result supplied from outside, with who supplied it (kept in the journal)."""

    by: str = ""


def external_calls_of(run: Any) -> ExternalCalls:
    """The live external calls of a run (a RunContext), made on first use."""
    found = run.service(SERVICE_NAME, ExternalCalls)
    assert isinstance(found, ExternalCalls)
    return found


def waiting_call(
    call: ToolCall, schema: Mapping[str, Any] | None, deadline: float | None, run_id: str, node: str
) -> WaitingCall:
    """The live record of `call`, handed out to wait for its result."""
    return WaitingCall(
        call.id or "",
        call.name,
        call.arguments,
        dict(schema) if schema else None,
        deadline,
        run_id,
        node,
    )

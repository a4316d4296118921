"""The question store (MCP elicitation's desk) and the forms, without a server: answers from
other threads, timeouts, withdrawal on cancel and at the run's end, attending, validation, and
hostile forms (refused before anything is validated)."""

from __future__ import annotations

import threading

import anyio
import pytest

from jianmu_bt.runtime.question_forms import (
    content_problems,
    default_content,
    form_fields,
    question_problem,
    schema_problem,
)
from jianmu_bt.runtime.questions import AnswerError, QuestionStore, UnknownQuestionError

pytestmark = pytest.mark.anyio

FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "mail": {"type": "string", "format": "email"},
        "pets": {"type": "array", "items": {"anyOf": [{"const": "c", "title": "Cat"}]}},
        "size": {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]},
        "ok": {"type": "boolean", "default": True},
    },
    "required": ["name", "ok"],
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_an_answer_from_another_thread_wakes_the_waiting_asker() -> None:
    store = QuestionStore()
    question = store.ask("srv", "Who?", FORM, "run_1")
    errors: list[str] = []

    def person() -> None:
        try:
            store.answer(question.id, "accept", {"name": "Ada", "mail": "not-mail", "ok": True})
        except AnswerError as exc:
            errors.append(str(exc))
        store.answer(question.id, "accept", {"name": "Ada", "ok": False}, by="test")

    thread = threading.Thread(target=person)
    with anyio.fail_after(10):
        thread.start()
        answer = await store.wait(question, timeout=30)
    thread.join()
    assert (answer.action, answer.content, answer.by) == (
        "accept",
        {"name": "Ada", "ok": False},
        "test",
    )
    assert "mail: 'not-mail' is not a 'email'" in errors[0]
    assert store.pending() == []
    with pytest.raises(AnswerError, match="already closed \\(accept\\)"):
        store.answer(question.id, "decline")


async def test_bad_answers_are_refused_and_leave_the_question_open() -> None:
    store = QuestionStore()
    question = store.ask("srv", "Who?", FORM)
    for action, content, words in [
        ("maybe", None, "the action must be one of accept, decline, cancel"),
        ("decline", {"name": "x"}, "a 'decline' answer takes no content"),
        ("accept", {"name": "Ada", "ok": True, "age": 3}, "age: not a field of this form"),
        ("accept", None, "'name' is a required property"),
    ]:
        with pytest.raises(AnswerError, match=words):
            store.answer(question.id, action, content)
    assert store.pending() == [question]
    with pytest.raises(UnknownQuestionError, match="no question has the id 'q_nope'"):
        store.answer("q_nope", "decline")


async def test_timeout_declines_and_cancellation_withdraws() -> None:
    store = QuestionStore()
    late = store.ask("srv", "Anyone?", FORM)
    answer = await store.wait(late, timeout=0.05)
    assert (answer.action, answer.reason, answer.by) == (
        "decline",
        "no answer within 0.05s",
        "timeout",
    )

    withdrawn = store.ask("srv", "Still there?", FORM)
    with anyio.move_on_after(0.05):
        await store.wait(withdrawn, timeout=30)
    assert withdrawn.answer is not None and withdrawn.answer.action == "cancel"
    assert store.pending() == []


def test_forms_are_checked_and_read_field_by_field() -> None:
    nested = {"type": "object", "properties": {"a": {"type": "object"}}}
    assert "field 'a' has type 'object'" in schema_problem(nested)
    assert "must be 'object'" in schema_problem({"type": "string"})
    assert "does not define: b" in schema_problem({"type": "object", "required": ["b"]})
    assert schema_problem(FORM) == ""
    fields = {field.name: field for field in form_fields(FORM)}
    assert fields["pets"].multiple and fields["pets"].choices == (("c", "Cat"),)
    assert fields["size"].choices == (("s", "Small"), ("m", "Medium"))
    assert default_content(FORM) == ({"ok": True}, ["name"])


def _form(field: dict[str, object]) -> dict[str, object]:
    return {"type": "object", "properties": {"f": field}}


def test_hostile_forms_are_refused_with_the_reason_before_anything_is_validated() -> None:
    deep: dict[str, object] = {"type": "string"}
    for _ in range(3000):
        deep = {"type": "object", "properties": {"x": deep}}
    deep_default: list[object] = []
    for _ in range(5000):
        deep_default = [deep_default]
    cases = [
        (_form({"type": "string", "pattern": "(a+)+$"}), "field 'f' uses pattern, not among"),
        (_form({"type": "string", "$ref": "#/nope"}), "field 'f' uses $ref, not among"),
        ({"type": "object", "$defs": {}, "properties": {}}, "the requested schema uses $defs"),
        (_form({"type": "array", "items": {"type": "string"}}), "items are not choices"),
        (_form({"type": "array"}), "an array without `items`"),
        (_form({"type": "array", "items": {"type": "object", "enum": ["a"]}}), "choices are text"),
        (_form(deep), "field 'f' has type 'object'"),
        (_form({"type": "string", "default": deep_default}), "the default (a list) is not a str"),
        (_form({"type": "string", "enum": [deep_default]}), "`enum` holds a list, not text"),
        (_form({"type": "number", "maximum": float("inf")}), "`maximum` is not a finite number"),
        (_form({"type": "string", "format": "regex"}), "the format 'regex' is not one of"),
        (_form({"type": "string", "oneOf": [{"const": "a", "not": {}}]}), "uses not, not among"),
        (
            {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(20_000)}},
            "the form has 20000 fields (at most 100)",
        ),
        (
            {"type": "object", "properties": {f"f{i}": _big() for i in range(90)}},
            "bytes of JSON (at most 65536)",
        ),
    ]
    for schema, words in cases:
        assert words in schema_problem(schema), (words, schema_problem(schema)[:200])
    assert "4097 characters (at most 4096)" in question_problem("x" * 4097, FORM)
    assert question_problem("Who?", FORM) == ""


def _big() -> dict[str, object]:
    return {"type": "string", "description": "x" * 1000}


def test_a_form_the_validator_cannot_resolve_is_a_problem_never_an_exception() -> None:
    # content_problems gets only checked forms from the store, but stays safe on any form.
    problems = content_problems(_form({"$ref": "#/nope"}), {"f": 1})
    assert problems and problems[0].startswith("the form cannot be checked: ")


async def test_withdrawing_wakes_every_waiting_asker_with_cancel_and_attending_counts() -> None:
    store = QuestionStore()
    assert not store.attended
    with store.attend(), store.attend():
        assert store.attended
    assert not store.attended
    first, second = store.ask("a", "One?", FORM), store.ask("b", "Two?", FORM)
    answers = []

    async def asker(question: object) -> None:
        answers.append(await store.wait(question, timeout=60))  # type: ignore[arg-type]

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(asker, first)
            tasks.start_soon(asker, second)
            await anyio.sleep(0.05)
            thread = threading.Thread(target=store.withdraw_pending, args=("the run ended",))
            thread.start()  # from another thread, as a halt may come
    thread.join()
    assert [(a.action, a.reason, a.by) for a in answers] == [("cancel", "the run ended", "run")] * 2
    assert store.withdraw_pending("again") == [] and store.withdrawals == 2
    assert first.outcome() == {
        "question_id": first.id,
        "server": "a",
        "action": "cancel",
        "reason": "the run ended",
        "by": "run",
    }

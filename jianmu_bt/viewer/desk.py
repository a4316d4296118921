"""The viewer as a desk: questions for a person and external calls' results, given on the page.

While a live source serves a tree's run it attends the tree's questions and results (`attend`):
an `ask` step, an MCP server's question and a call of an external tool wait in the process for
the page, instead of being declined at once or pausing the run. The page learns of them from
the event stream (`input.requested`, `tool.call.waiting`; `with_fields` adds to a question's
event the fields of its form, as `form_fields` lists them for every desk) and of their end from
it too (`input.answered`, `tool.call.completed`/`failed`, `tree.finished`).

`answer` and `supply` take the page's values (`POST /api/answer`, `/api/result`) as the tree's
`answer` and `supply_result` would from Python, `by="viewer"`: the tree checks each value
against its schema, and one that does not fit is refused with the validator's message (422)
while the question or call stays open. `waiting(source)` lists what is open now
(`GET /api/waiting`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from jianmu_bt.runtime.outside import OutsideValueError
from jianmu_bt.runtime.questions import AnswerError, UnknownQuestionError
from jianmu_bt.viewer.desk_forms import with_fields
from jianmu_bt.viewer.sources import DECIDED_BY, DecisionError, Source

#: The actions the page may answer a question with.
PAGE_ACTIONS = ("accept", "decline")
#: The reason a question declined on the page carries when the person gave none.
DECLINED_IN_VIEWER = "declined in the viewer"


def waiting(source: Source) -> dict[str, list[dict[str, Any]]]:
    """The questions and external calls of the live run that wait for the page now."""
    tree = source.tree
    if source.mode != "live" or tree is None or source.ended is not None:
        return {"questions": [], "results": []}
    questions = [with_fields(question.to_dict()) for question in tree.pending_questions()]
    return {
        "questions": questions,
        "results": [call.to_dict() for call in tree.pending_results()],
    }


def _live_tree(source: Source, how: str) -> Any:
    """The live run's tree (DecisionError 409 for a replay, or a run that has ended: `how`
    says how the value can still be given)."""
    if source.mode != "live" or source.tree is None:
        raise DecisionError(409, "this view is a replay: there is no run to answer for")
    if source.ended is not None:
        status, run_id = source.ended
        later = f": continue with `jianmu resume {run_id} {how}`" if status == "paused" else ""
        raise DecisionError(409, f"the run has ended ({status}){later}")
    return source.tree


def answer(
    source: Source,
    question_id: str,
    action: str,
    content: Mapping[str, Any] | None,
    reason: str = "",
) -> dict[str, Any]:
    """Answer an open question of the live run: `accept` with `content` (DecisionError 422
    with the form's problems when it does not fit; the question stays open) or `decline`."""
    tree = _live_tree(source, f"--answer {question_id}=JSON")
    try:
        question = tree.question(question_id)
    except UnknownQuestionError:
        raise DecisionError(404, f"no question has the id {question_id!r}") from None
    if not question.pending:
        raise DecisionError(409, f"question {question_id} is already closed")
    if action == "decline":
        content, reason = None, reason.strip() or DECLINED_IN_VIEWER
    try:
        tree.answer(question_id, action, content, reason=reason, by=DECIDED_BY)
    except UnknownQuestionError:
        raise DecisionError(404, f"no question has the id {question_id!r}") from None
    except AnswerError as exc:
        status = 409 if not question.pending else 422
        raise DecisionError(status, str(exc)) from None
    return {"question_id": question_id, "action": action}


def supply(source: Source, call_id: str, value: Any) -> dict[str, Any]:
    """Give a waiting external call of the live run its result (DecisionError 404 when no
    such call waits, 422 with the schema's problems when the value does not fit)."""
    tree = _live_tree(source, f"--result {call_id}=JSON")
    if call_id not in {call.call_id for call in tree.pending_results()}:
        raise DecisionError(404, f"no external call {call_id!r} waits for a result")
    try:
        tree.supply_result(call_id, value, by=DECIDED_BY)
    except OutsideValueError as exc:
        raise DecisionError(422, str(exc)) from None
    return {"call_id": call_id, "supplied": True}


def json_value(body: Mapping[str, Any]) -> Any:
    """The result a `/api/result` body gives: `value` (any JSON), or `value_json` (its text, as
    the page's text area sends it; DecisionError 400 when it is not JSON)."""
    if "value_json" in body:
        text = body["value_json"]
        if not isinstance(text, str):
            raise DecisionError(400, "'value_json' must be the text of a JSON value")
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            where = f"line {exc.lineno} column {exc.colno}"
            raise DecisionError(400, f"the result is not JSON at {where}: {exc.msg}") from None
    if "value" not in body:
        raise DecisionError(400, "give the result as 'value' (JSON) or 'value_json' (its text)")
    return body["value"]

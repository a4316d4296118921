"""The viewer's routes for questions and external results (see `desk`).

| route | what |
|---|---|
| `GET /api/waiting` | `{"questions": [...], "results": [...]}`: what waits for the page now |
| `POST /api/answer` | `{"question_id", "action": "accept"|"decline", "content"?, "reason"?}` |
| `POST /api/result` | `{"call_id", "value"}` (any JSON) or `{"call_id", "value_json"}` (its text) |

They are checked as `/api/decide` is (`app`): this server's Host and Origin only, and the token
(the reads also as `?token=`, the actions in the `X-Jianmu-Token` header only). A malformed body
is refused with 400, an unknown id with 404, a value that does not fit its schema with 422 (the
validator's message in `{"error": ...}`; the question or call stays open), anything for a run
that has ended with 409.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from jianmu_bt.viewer import desk
from jianmu_bt.viewer.sources import DecisionError, Source

#: `refused(request, query=...)`: the response refusing a request without the token, or None.
Refuser = Callable[..., Response | None]
#: `action_body(request)`: the body of an action as a JSON object, or the response refusing it.
BodyReader = Callable[[Request], Awaitable[dict[str, Any] | Response]]
NO_CACHE = {"cache-control": "no-store"}


def _bad(message: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def desk_routes(source: Source, refused: Refuser, action_body: BodyReader) -> list[Route]:
    """The routes of the page's desk for `source`, with the app's token check and body reader."""

    async def pending(request: Request) -> Response:
        if (refusal := refused(request, query=True)) is not None:
            return refusal
        return JSONResponse(desk.waiting(source), headers=NO_CACHE)

    async def answer(request: Request) -> Response:
        body = await action_body(request)
        if isinstance(body, Response):
            return body
        question_id, action = body.get("question_id"), body.get("action")
        content, reason = body.get("content"), body.get("reason") or ""
        if not isinstance(question_id, str) or not question_id:
            return _bad("'question_id' must be a non-empty string")
        if action not in desk.PAGE_ACTIONS or not isinstance(reason, str):
            return _bad("'action' must be 'accept' or 'decline' ('reason' a string)")
        if action == "accept" and not isinstance(content, dict):
            return _bad("an 'accept' needs 'content': a JSON object of the form's fields")
        try:
            done = await anyio.to_thread.run_sync(
                desk.answer, source, question_id, action, content, reason
            )
        except DecisionError as exc:
            return _bad(str(exc), exc.status)
        return JSONResponse(done)

    async def result(request: Request) -> Response:
        body = await action_body(request)
        if isinstance(body, Response):
            return body
        call_id = body.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            return _bad("'call_id' must be a non-empty string")
        try:
            value = desk.json_value(body)
            done = await anyio.to_thread.run_sync(desk.supply, source, call_id, value)
        except DecisionError as exc:
            return _bad(str(exc), exc.status)
        return JSONResponse(done)

    return [
        Route("/api/waiting", pending),
        Route("/api/answer", answer, methods=["POST"]),
        Route("/api/result", result, methods=["POST"]),
    ]

"""The viewer's web app (Starlette): the page, its static files, the tree, the event stream
and the decisions.

| route | what |
|---|---|
| `GET /` | the page (`static/index.html`) |
| `GET /static/NAME` | draw.js, actions.js, desk.js, viewer.js, viewer.css; no other file served |
| `GET /api/tree` | the tree's nodes, its SVG (when Graphviz drew it), the mode and the problems |
| `GET /api/events` | Server-Sent Events, ids from 1; `Last-Event-ID` (or `?after=N`) resumes |
| `GET /api/pending` | the calls waiting for a reviewer: tool, arguments, reason, policy |
| `POST /api/decide` | `{"call_id", "decision", "reason", "arguments"?, "reply"?}` (see below) |
| `/api/waiting`, `/api/answer`, `/api/result` | questions and external results (`desk_http`) |
| `POST /api/fork` | `{"seq"}`: a new run from that checkpoint of a durable run |

`"decision"` is `"approve"`, `"deny"` or `"respond"`. An approval with `"arguments"` (a JSON
object, or the text of one as the page's editor sends it) runs the held call with those instead:
text that is not a JSON object is refused with 400, an edit the tree refuses (not the tool's
schema, refused by a guard policy) with 422; either way with `{"error": why}`, and the call
stays held. `"respond"` answers the held call in its place with the text `"reply"` (it does not
run; the agent reads the reply as its result).

Every request passes `HostOriginGuard` first (foreign Host or Origin: 403). Every `/api/` route
needs the token printed at start-up (403 without it): in the `X-Jianmu-Token` header, or for the
reads (an `EventSource` cannot send headers) as `?token=`. The page and its static files carry
no data and need none; the page reads the token from its URL's `#token=` fragment.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from jianmu_bt.http_guard import TOKEN_HEADER, Access, HostOriginGuard
from jianmu_bt.viewer.desk_http import desk_routes
from jianmu_bt.viewer.forking import ForkError
from jianmu_bt.viewer.sources import DecisionError, Source

#: The folder of the page's files (shipped in the package).
STATIC = Path(__file__).with_name("static")
#: The only files served, with their media types.
ASSETS = {
    "index.html": "text/html; charset=utf-8",
    "draw.js": "text/javascript; charset=utf-8",
    "actions.js": "text/javascript; charset=utf-8",
    "desk.js": "text/javascript; charset=utf-8",
    "viewer.js": "text/javascript; charset=utf-8",
    "viewer.css": "text/css; charset=utf-8",
}
#: Seconds between keep-alive comments on an idle event stream.
KEEPALIVE = 15.0
NO_CACHE = {"cache-control": "no-store"}


def _asset(name: str) -> Response:
    if name not in ASSETS:
        return Response("not found", status_code=404, media_type="text/plain")
    data = (STATIC / name).read_bytes()
    return Response(data, media_type=ASSETS[name], headers=NO_CACHE)


def _last_id(request: Request) -> int:
    raw = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
    try:
        return max(0, int(raw))
    except ValueError:
        return 0


def edited_arguments(body: Mapping[str, Any], decision: str) -> dict[str, Any] | None:
    """The arguments an approval edits the call to (None: no edit): `"arguments"` as a JSON
    object, or the text of one. DecisionError (400) for anything else, or with a denial."""
    given = body.get("arguments")
    if given is None:
        return None
    if decision != "approve":
        raise DecisionError(400, "only an approval can carry edited 'arguments'")
    if isinstance(given, str):
        try:
            given = json.loads(given)
        except json.JSONDecodeError as exc:
            where = f"line {exc.lineno} column {exc.colno}"
            message = f"the edited arguments are not JSON at {where}: {exc.msg}"
            raise DecisionError(400, message) from None
    if not isinstance(given, dict):
        raise DecisionError(400, "the edited arguments must be a JSON object")
    return given


NO_TOKEN = (
    "no valid token: open the URL the viewer printed at start-up (it ends in #token=...), or "
    "give the token it printed"
)


def create_app(source: Source, access: Access) -> Any:
    """The ASGI app serving `source`, its requests checked against `access`."""

    def refused(request: Request, *, query: bool) -> Response | None:
        """403 unless the request carries the token (in the header; with `query`, or `?token=`)."""
        given = request.headers.get(TOKEN_HEADER)
        if given is None and query:
            given = request.query_params.get("token")
        if access.token_ok(given):
            return None
        return JSONResponse({"error": NO_TOKEN}, status_code=403, headers=NO_CACHE)

    async def page(request: Request) -> Response:
        return _asset("index.html")

    async def static(request: Request) -> Response:
        return _asset(request.path_params["name"])

    async def tree(request: Request) -> Response:
        if (refusal := refused(request, query=True)) is not None:
            return refusal
        document = source.view.as_json()
        document.update(
            mode=source.mode, problems=source.problems, can_fork=source.fork is not None
        )
        return JSONResponse(document, headers=NO_CACHE)

    async def events(request: Request) -> Response:
        if (refusal := refused(request, query=True)) is not None:
            return refusal
        last = _last_id(request)

        async def stream() -> AsyncIterator[str]:
            nonlocal last
            yield "retry: 1000\n\n"
            while True:
                for number, line in source.hub.after(last):
                    last = number
                    yield f"id: {number}\nevent: run\ndata: {line}\n\n"
                if source.hub.finished and len(source.hub) <= last:
                    yield "event: end\ndata: {}\n\n"
                    return
                if await request.is_disconnected():
                    return
                before = last
                await source.hub.wait(last, KEEPALIVE)
                if len(source.hub) <= before and not source.hub.finished:
                    yield ": keep-alive\n\n"

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={**NO_CACHE, "x-accel-buffering": "no"},
        )

    async def no_icon(request: Request) -> Response:
        return Response(status_code=204)

    async def pending(request: Request) -> Response:
        if (refusal := refused(request, query=True)) is not None:
            return refusal
        return JSONResponse({"pending": source.pending()}, headers=NO_CACHE)

    async def action_body(request: Request) -> dict[str, Any] | Response:
        """The JSON object of an action's body, or the response refusing it (403, 400)."""
        if (refusal := refused(request, query=False)) is not None:
            return refusal
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError):
            return JSONResponse({"error": "the body is not JSON"}, status_code=400)
        if not isinstance(body, dict):
            return JSONResponse({"error": "the body must be a JSON object"}, status_code=400)
        return body

    async def decide(request: Request) -> Response:
        body = await action_body(request)
        if isinstance(body, Response):
            return body
        call_id, decision = body.get("call_id"), body.get("decision")
        reason = body.get("reason") or ""
        if not isinstance(call_id, str) or not call_id:
            return JSONResponse({"error": "'call_id' must be a non-empty string"}, status_code=400)
        if decision not in ("approve", "deny", "respond") or not isinstance(reason, str):
            return JSONResponse(
                {"error": "'decision' must be 'approve', 'deny' or 'respond' ('reason' a string)"},
                status_code=400,
            )
        if decision == "respond":
            return await respond(call_id, body.get("reply"))
        try:
            arguments = edited_arguments(body, decision)
            # In a worker thread: the decision is applied on the run's own loop, waited for here.
            done = await anyio.to_thread.run_sync(
                source.decide, call_id, decision == "approve", reason, arguments
            )
        except DecisionError as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)
        return JSONResponse(done)

    async def respond(call_id: str, reply: Any) -> Response:
        """Answer a held call in its place with `reply`, the text the agent reads."""
        if not isinstance(reply, str) or not reply.strip():
            return JSONResponse({"error": "'reply' must be a non-empty text"}, status_code=400)
        try:
            done = await anyio.to_thread.run_sync(source.respond, call_id, reply)
        except DecisionError as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)
        return JSONResponse(done)

    async def fork(request: Request) -> Response:
        body = await action_body(request)
        if isinstance(body, Response):
            return body
        seq = body.get("seq")
        if source.fork is None:
            return JSONResponse({"error": "only a durable run's history can be forked"}, 409)
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
            return JSONResponse({"error": "'seq' must be a checkpoint number (1, 2, ...)"}, 400)
        try:
            # The store's I/O in a worker thread: the server's loop keeps serving meanwhile.
            new_id = await anyio.to_thread.run_sync(source.fork, seq)
        except ForkError as exc:
            return JSONResponse({"error": str(exc)}, status_code=409)
        return JSONResponse({"run_id": new_id, "resume": f"jianmu resume {new_id}"})

    app = Starlette(
        routes=[
            Route("/", page),
            Route("/static/{name}", static),
            Route("/favicon.ico", no_icon),
            Route("/api/tree", tree),
            Route("/api/events", events),
            Route("/api/pending", pending),
            Route("/api/decide", decide, methods=["POST"]),
            Route("/api/fork", fork, methods=["POST"]),
            *desk_routes(source, refused, action_body),
        ]
    )
    return HostOriginGuard(app, access)

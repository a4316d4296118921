"""An MCP server (the official SDK's MCPServer, over stdio) that asks its client's user questions.

It asks in both protocol eras: up to 2025-11-25 as a request of its own in the middle of the call
(`elicitation/create`), from 2026-07-28 inside the call's result (`InputRequiredResult`), which
the client answers and retries the call with.

| tool      | does                                                                     |
|-----------|--------------------------------------------------------------------------|
| `profile` | asks for a name (required), an age and a colour; answers `ACTION JSON`   |
| `nag`     | asks `times` questions in a row; answers how many were answered (and the |
|           | first refusal, in the older era)                                          |
| `nested`  | asks with a form that has a nested object (not allowed)                  |
| `hostile` | asks with a form whose field has a catastrophic `pattern` (not allowed)  |
| `visit`   | asks in URL mode (open a page); answers the action                       |
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("asker")

PROFILE = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "description": "your name", "minLength": 1},
        "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
        "colour": {"type": "string", "enum": ["red", "green", "blue"], "default": "green"},
    },
    "required": ["name"],
}


LEGACY = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
Asked = types.ElicitResult | types.InputRequiredResult


async def ask(ctx: Context, key: str, message: str, form: dict[str, Any]) -> Asked:
    """The answer to a question, or (2026-07-28) the result that asks it."""
    if ctx.protocol_version in LEGACY:
        return await ctx.session.elicit_form(message, form, ctx.request_id)
    answers = ctx.input_responses or {}
    if key in answers:
        answer = answers[key]
        assert isinstance(answer, types.ElicitResult)
        return answer
    params = types.ElicitRequestFormParams(message=message, requested_schema=form)
    question = types.ElicitRequest(params=params)
    return types.InputRequiredResult(input_requests={key: question})


def _reply(result: types.ElicitResult) -> str:
    return f"{result.action} {json.dumps(result.content, sort_keys=True)}"


@server.tool()
async def profile(ctx: Context) -> str | types.InputRequiredResult:
    """Ask the user for their name, age and colour."""
    result = await ask(ctx, "profile", "Who are you?", PROFILE)
    return result if isinstance(result, types.InputRequiredResult) else _reply(result)


@server.tool()
async def nag(times: int, ctx: Context) -> str | types.InputRequiredResult:
    """Ask `times` yes/no questions in a row, stopping at the first refusal."""
    form = {"type": "object", "properties": {"ok": {"type": "boolean", "default": True}}}
    if ctx.protocol_version in LEGACY:
        answered = 0
        for number in range(1, times + 1):
            try:
                await ctx.session.elicit_form(f"question {number}: ok?", form, ctx.request_id)
            except Exception as exc:  # the client refused: report it and stop asking
                return f"answered {answered}; then refused: {exc}"
            answered += 1
        return f"answered {answered}"
    # 2026-07-28: one question per round; request_state counts the answered ones.
    answered = int(ctx.request_state or 0) + (1 if ctx.input_responses else 0)
    if answered >= times:
        return f"answered {answered}"
    params = types.ElicitRequestFormParams(
        message=f"question {answered + 1}: ok?", requested_schema=form
    )
    question = types.ElicitRequest(params=params)
    return types.InputRequiredResult(
        input_requests={f"q{answered + 1}": question}, request_state=str(answered)
    )


@server.tool()
async def nested(ctx: Context) -> str | types.InputRequiredResult:
    """Ask with a form a client must not accept (a nested object)."""
    form = {
        "type": "object",
        "properties": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}},
    }
    result = await ask(ctx, "where", "Where?", form)
    return result if isinstance(result, types.InputRequiredResult) else _reply(result)


@server.tool()
async def hostile(ctx: Context) -> str | types.InputRequiredResult:
    """Ask with a form whose default would take seconds to check against its pattern."""
    field = {"type": "string", "pattern": "(a+)+$", "default": "a" * 40 + "!"}
    form = {"type": "object", "properties": {"word": field}, "required": ["word"]}
    result = await ask(ctx, "word", "A word?", form)
    return result if isinstance(result, types.InputRequiredResult) else _reply(result)


@server.tool()
async def visit(ctx: Context) -> str | types.InputRequiredResult:
    """Ask the user to open a page (URL-mode elicitation)."""
    url, message = "https://example.invalid/login", "Sign in, please"
    if ctx.protocol_version in LEGACY:
        return str((await ctx.elicit_url(message, url, "e-1")).action)
    answers = ctx.input_responses or {}
    if "visit" in answers:
        return str(answers["visit"].action)  # type: ignore[union-attr]
    params = types.ElicitRequestURLParams(message=message, url=url)
    return types.InputRequiredResult(input_requests={"visit": types.ElicitRequest(params=params)})


if __name__ == "__main__":
    server.run()

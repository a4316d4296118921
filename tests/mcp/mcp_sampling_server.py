"""An MCP server (the official SDK's MCPServer, over stdio) whose tools ask the client's model.

| tool       | does                                                                          |
|------------|-------------------------------------------------------------------------------|
| `ask`      | one request (`prompt`, `max_tokens`, `stop`); `model said: TEXT (model M, stop R)` |
| `ask_loop` | asks `times` times in a row; answers `answered N`                             |

Both protocol eras: a legacy session asks over its back-channel (`ctx.session.create_message`);
on the 2026-07-28 protocol the tool answers with an `InputRequiredResult` carrying the request
and is called again with the reply (the turn count travels in `request_state`). A refused
request fails the tool: the client's error is raised (legacy) or ends the call (2026-07-28).
"""

from __future__ import annotations

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

LEGACY = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

server = MCPServer("sampling")


def _request(prompt: str, max_tokens: int, stop: list[str] | None) -> types.CreateMessageRequest:
    text = types.TextContent(type="text", text=prompt)
    params = types.CreateMessageRequestParams(
        messages=[types.SamplingMessage(role="user", content=text)],
        max_tokens=max_tokens,
        system_prompt="You answer tools.",
        temperature=0.5,
        stop_sequences=stop,
    )
    return types.CreateMessageRequest(method="sampling/createMessage", params=params)


def _said(reply: types.CreateMessageResult) -> str:
    content = reply.content
    text = content.text if isinstance(content, types.TextContent) else repr(content)
    return f"model said: {text} (model {reply.model}, stop {reply.stop_reason})"


@server.tool()
async def ask(
    prompt: str, ctx: Context, max_tokens: int = 50, stop: list[str] | None = None
) -> str | types.InputRequiredResult:
    """Ask the client's model `prompt` (sampling)."""
    request = _request(prompt, max_tokens, stop)
    if ctx.protocol_version in LEGACY:
        p = request.params
        reply = await ctx.session.create_message(
            p.messages,
            max_tokens=p.max_tokens,
            system_prompt=p.system_prompt,
            temperature=p.temperature,
            stop_sequences=p.stop_sequences,
        )
        return _said(reply)
    answers = ctx.input_responses or {}
    if "sample" not in answers:
        return types.InputRequiredResult(input_requests={"sample": request})
    reply = answers["sample"]
    assert isinstance(reply, types.CreateMessageResult), reply
    return _said(reply)


@server.tool()
async def ask_loop(times: int, ctx: Context) -> str | types.InputRequiredResult:
    """Ask the client's model `times` times in a row (sampling in a loop)."""
    if ctx.protocol_version in LEGACY:
        for turn in range(times):
            p = _request(f"turn {turn}", 20, None).params
            await ctx.session.create_message(p.messages, max_tokens=p.max_tokens)
        return f"answered {times}"
    answered = int(ctx.request_state or 0) + (1 if ctx.input_responses else 0)
    if answered >= times:
        return f"answered {answered}"
    return types.InputRequiredResult(
        input_requests={"sample": _request(f"turn {answered}", 20, None)},
        request_state=str(answered),
    )


if __name__ == "__main__":
    server.run()

"""An MCP server (the official SDK's MCPServer, over stdio) for the client feature tests.

| tool              | does                                                                  |
|-------------------|-----------------------------------------------------------------------|
| `count`           | reports progress `steps` times, `pause` seconds apart, then answers   |
| `grow`            | adds a tool named `name` (doubles `x`) and announces the change       |
| `flood`           | sends `times` tool-list-changed notices (earlier protocols' bare ones) |
| `picture`         | answers with a text block, a PNG image block and an audio block       |
| `roots`           | asks the client for its roots (both protocol eras) and lists them     |
| `ask`             | asks the client a question (elicitation)                              |
| `sample`          | asks the client's model for a reply (sampling)                        |
| `linger`          | sleeps; when cancelled, writes `cancelled` to the file `path`         |
| `wait_for`        | `found` once the file `path` exists (within `seconds`), else `missing` |
| `queued`          | listed with `execution.taskSupport: required`                         |

Options: `--barrier FILE --parties N` appends `started PID` to FILE and answers nothing until
FILE has N such lines (or 25 s passed): N servers started one after another would never get
past it, N started side by side all do. `--sse` serves the legacy HTTP+SSE transport on
127.0.0.1 (a port the OS picks) instead of stdio, and prints `listening on URL` to stderr.
"""

from __future__ import annotations

import argparse
import base64
import os
import time
from typing import Any

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

#: A 1x1 PNG.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()
#: The first bytes of a WAV file: a stand-in for audio data.
WAV = base64.b64encode(b"RIFF\x24\x00\x00\x00WAVEfmt ").decode()


class FeatureServer(MCPServer):
    """Lists `queued` as a tool that requires task-augmented execution."""

    async def list_tools(self) -> list[types.Tool]:
        tools = await super().list_tools()
        for tool in tools:
            if tool.name == "queued":
                tool.execution = types.ToolExecution(task_support="required")
        return tools


server = FeatureServer("features")


@server.tool()
async def count(steps: int, pause: float, ctx: Context) -> str:
    """Report progress `steps` times, `pause` seconds apart."""
    for step in range(1, steps + 1):
        await anyio.sleep(pause)
        await ctx.report_progress(step, steps, f"step {step}")
    return f"counted {steps}"


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a tool called `name` and announce that the tool list changed."""

    def double(x: int) -> int:
        """Double x."""
        return 2 * x

    server.add_tool(double, name=name)
    await ctx.notify_tools_changed()  # 2026-07-28: to `subscriptions/listen` streams
    await ctx.session.send_tool_list_changed()  # earlier protocols: a bare notification
    return f"added {name}"


@server.tool()
async def flood(times: int, ctx: Context) -> str:
    """Announce a tool-list change `times` times in a row (nothing changed)."""
    for _ in range(times):
        await ctx.session.send_tool_list_changed()
    return f"sent {times}"


@server.tool()
async def picture() -> list[Any]:
    """A text block, a PNG image and a bit of audio."""
    return [
        types.TextContent(type="text", text="a red dot"),
        types.ImageContent(type="image", data=PNG, mime_type="image/png"),
        types.AudioContent(type="audio", data=WAV, mime_type="audio/wav"),
    ]


@server.tool()
async def roots(ctx: Context) -> str | types.InputRequiredResult:
    """The client's roots, one URI per line."""
    if ctx.protocol_version in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"):
        listed = await ctx.session.list_roots()
    else:
        answers = ctx.input_responses or {}
        if "roots" not in answers:
            request = types.ListRootsRequest(method="roots/list")
            return types.InputRequiredResult(input_requests={"roots": request})
        listed = answers["roots"]
    return "\n".join(str(root.uri) for root in listed.roots)


class Answer(BaseModel):
    ok: bool


@server.tool()
async def ask(ctx: Context) -> str:
    """Ask the client whether it is ok (elicitation)."""
    answer = await ctx.elicit("ok?", Answer)
    return f"answered {answer.action}"


@server.tool()
async def sample(ctx: Context) -> str:
    """Ask the client's model to say hello (sampling)."""
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))
    reply = await ctx.session.create_message([message], max_tokens=10)
    return f"model said {reply.content}"


@server.tool()
async def linger(path: str) -> str:
    """Sleep a minute; a cancelled call leaves `cancelled` in the file at `path`."""
    try:
        await anyio.sleep(60)
    except anyio.get_cancelled_exc_class():
        with open(path, "w") as marker:
            marker.write("cancelled")
        raise
    return "slept"


@server.tool()
async def wait_for(path: str, seconds: float) -> str:
    """`found` once the file at `path` exists (polled for `seconds`), else `missing`."""
    with anyio.move_on_after(seconds):
        while not os.path.exists(path):
            await anyio.sleep(0.02)
        return "found"
    return "missing"


@server.tool()
async def queued() -> str:
    """Only runs as a task."""
    return "ran"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--barrier")
    parser.add_argument("--parties", type=int, default=1)
    parser.add_argument("--sse", action="store_true")
    args = parser.parse_args()
    if args.barrier:
        with open(args.barrier, "a") as log:
            log.write(f"started {os.getpid()}\n")
        deadline = time.monotonic() + 25
        while time.monotonic() < deadline:
            with open(args.barrier) as log:
                if len(log.readlines()) >= args.parties:
                    break
            time.sleep(0.05)
    if args.sse:
        anyio.run(serve_sse)
    else:
        server.run()


async def serve_sse() -> None:
    """The legacy HTTP+SSE transport on a port the OS picks; its URL printed to stderr."""
    import socket
    import sys

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]
    app = server.sse_app(host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning")
    print(f"listening on http://127.0.0.1:{port}/sse", file=sys.stderr, flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    main()

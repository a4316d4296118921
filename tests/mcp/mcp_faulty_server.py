"""A misbehaving MCP server over stdio, written without the SDK (it starts in milliseconds).

It speaks just enough JSON-RPC for a client to connect (it answers `server/discover` with
"method not found", so clients fall back to the 2025-11-25 `initialize` handshake) and then
misbehaves on purpose, depending on the tool called:

| tool        | behaviour                                                        |
|-------------|------------------------------------------------------------------|
| `echo`      | answers normally: the arguments as JSON text                     |
| `hang`      | never answers (still reads stdin, exits when it closes)          |
| `block`     | blocks the whole process (stops reading stdin)                   |
| `exit`      | writes a line to stderr and exits with status 3, mid-call        |
| `malformed` | answers with a result whose `content` is not a list              |
| other       | JSON-RPC error -32602 "Unknown tool"                             |

Options: `--tools a,b` (names listed by tools/list; default all of the above), `--mute` (never
answer anything, not even the handshake), `--exit-at-start MSG` (print MSG to stderr and exit 1),
`--once FILE` (start once: a second start, while FILE exists, fails with a message).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

BEHAVIOURS = ["echo", "hang", "block", "exit", "malformed"]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def reply(request_id: object, result: dict) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def error(request_id: object, code: int, message: str) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


def tool_listing(names: list[str]) -> dict:
    return {
        "tools": [
            {
                "name": name,
                "description": f"faulty server tool {name}",
                "inputSchema": {"type": "object", "properties": {}},
            }
            for name in names
        ]
    }


def call_tool(request_id: object, params: dict, names: list[str]) -> None:
    name = params.get("name")
    behaviour = name if name in BEHAVIOURS else ("echo" if name in names else None)
    if behaviour == "echo":
        text = json.dumps(params.get("arguments") or {})
        reply(request_id, {"content": [{"type": "text", "text": text}], "isError": False})
    elif behaviour == "hang":
        return
    elif behaviour == "block":
        while True:
            time.sleep(60)
    elif behaviour == "exit":
        sys.stderr.write("faulty server: exiting in the middle of a call\n")
        sys.stderr.flush()
        os._exit(3)
    elif behaviour == "malformed":
        reply(request_id, {"content": "this should be a list", "isError": "maybe"})
    else:
        error(request_id, -32602, f"Unknown tool: {name}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", default=",".join(BEHAVIOURS))
    parser.add_argument("--mute", action="store_true")
    parser.add_argument("--exit-at-start")
    parser.add_argument("--once")
    args = parser.parse_args()
    if args.exit_at_start:
        sys.exit(args.exit_at_start)
    if args.once:
        if os.path.exists(args.once):
            sys.exit(f"faulty server: refusing to start a second time ({args.once} exists)")
        with open(args.once, "w") as marker:
            marker.write(str(os.getpid()))
    names = [n for n in args.tools.split(",") if n]
    for line in sys.stdin:
        if args.mute or not line.strip():
            continue
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue  # a notification
        if method == "initialize":
            reply(
                request_id,
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "faulty", "version": "0"},
                },
            )
        elif method == "tools/list":
            reply(request_id, tool_listing(names))
        elif method == "tools/call":
            call_tool(request_id, message.get("params") or {}, names)
        elif method == "ping":
            reply(request_id, {})
        else:
            error(request_id, -32601, f"Method not found: {method}")


if __name__ == "__main__":
    main()

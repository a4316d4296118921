"""An MCP server (the official SDK's MCPServer, over stdio) for the limits and the replay of the
tree side of resources and prompts.

- resource `limits://big.json`: a JSON list of 30,000 numbers, 240,000 characters;
- prompt `greet(name)`: `Say hello to <name>.`; each get appends a line to the file
  `$PROMPT_LOG`; refused ("prompts are shut") while the file `$PROMPT_GATE` exists, as a server
  that is down or changed would refuse it;
- prompt `big()`: one user message of 150,000 characters (more than an LLM node takes).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

server = MCPServer("limits")


@server.resource("limits://big.json", name="big-json", mime_type="application/json")
def big_json() -> str:
    """A JSON document longer than 100,000 characters."""
    return json.dumps(list(range(100_000, 130_000)))


@server.prompt()
def greet(name: str) -> str:
    """Ask the model to greet someone (refused while the gate file exists)."""
    with Path(os.environ["PROMPT_LOG"]).open("a", encoding="utf-8") as log:  # set by the test
        log.write(f"greet {name}\n")
    if Path(os.environ["PROMPT_GATE"]).exists():
        raise MCPError(-32602, "prompts are shut")  # a protocol error: its words reach the client
    return f"Say hello to {name}."


@server.prompt()
def big() -> str:
    """A prompt too large for an LLM node."""
    return "x" * 150_000


if __name__ == "__main__":
    server.run()

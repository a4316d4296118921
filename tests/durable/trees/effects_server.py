"""An MCP server (the official SDK's MCPServer, over stdio) whose tools write a ledger line each
time they run, before they wait at a gate (the effect has happened when a test kills the run):

- `pay(amount)`: no annotations at all (the MCP defaults: destructive, open-world, not read-only);
- `quote(symbol)`: `readOnlyHint: true` (safe to run again);
- `refund(amount)`: `idempotentHint: true`, not read-only.

The ledger is the file named by JIANMU_LEDGER; JIANMU_STEP_GATE names a file each call waits for
(see ledger_tools.py); the server appends its pid to the file JIANMU_SERVER_PIDS names, if any, so
a test can end a server its killed client left behind.
"""

from __future__ import annotations

import os

from ledger_tools import pause_at_gate, write_line
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("effects")
if os.environ.get("JIANMU_SERVER_PIDS"):
    with open(os.environ["JIANMU_SERVER_PIDS"], "a") as pids:
        pids.write(f"{os.getpid()}\n")


def _record_then_wait(line: str) -> None:
    write_line(line)
    pause_at_gate()


@server.tool()
def pay(amount: int) -> str:
    """Pay an amount (the server does not annotate this tool)."""
    _record_then_wait(f"pay {amount}")
    return f"paid {amount}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def quote(symbol: str) -> str:
    """Quote a price (read-only)."""
    _record_then_wait(f"quote {symbol}")
    return f"{symbol} at 10"


@server.tool(annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=True))
def refund(amount: int) -> str:
    """Refund an amount (idempotent)."""
    _record_then_wait(f"refund {amount}")
    return f"refunded {amount}"


if __name__ == "__main__":
    server.run()

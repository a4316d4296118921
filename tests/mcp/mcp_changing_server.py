"""An MCP server whose tools change while it serves: `grow(name)` adds a tool `name` at run
time through the Python API (`ServedTools.add`), `shrink(name)` removes it.

Run: python mcp_changing_server.py [--http]   (HTTP prints its URL to stderr, as `serve` does)
"""

from __future__ import annotations

import sys

import anyio

from jianmu_bt import ToolSet, tool
from jianmu_bt.mcp import ServedTools, announce, serve

served: ServedTools


@tool
async def grow(name: str) -> str:
    """Add a tool called `name` (it answers its own name)."""

    @tool(name=name, description=f"The tool {name}.", blocking=False)
    def added() -> str:
        return name

    await served.add(added)
    return f"added {name}"


@tool
async def shrink(name: str) -> str:
    """Remove the tool called `name`."""
    await served.remove(name)
    return f"removed {name}"


async def main() -> None:
    global served
    served = ServedTools(ToolSet([grow, shrink]))
    transport = "http" if "--http" in sys.argv else "stdio"
    await serve(served, transport=transport, port=0, on_ready=announce(served.toolset))


if __name__ == "__main__":
    anyio.run(main)

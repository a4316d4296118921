"""The runner protocol: where a tool call actually runs.

A runner receives a tool and its already-merged arguments and returns the tool's raw result.
`Tool.execute(..., runner=...)` hands a call to a runner instead of running it in the caller's
process; sandboxes implement this protocol to isolate the call.

The protocol belongs to the tool layer (the lowest); sandboxes, one layer up, implement it. A
runner sees a tool only through the small `RunnableTool` protocol.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class RunnableTool(Protocol):
    """What a runner needs from a tool: a name and a way to run it locally."""

    name: str

    async def execute_local(self, args: Any) -> Any:
        """Run the tool in this process (validation included) and return its raw result."""
        ...


@runtime_checkable
class ToolRunner(Protocol):
    """Runs one tool call somewhere (this process, a child process, a container)."""

    async def run(self, tool: RunnableTool, args: Any) -> Any:
        """Run `tool` with `args`; return its raw result (any shape `ToolResult.from_raw` takes)."""
        ...


class InProcessRunner:
    """The default runner: runs the call in this process, exactly as without a runner."""

    async def run(self, tool: RunnableTool, args: Any) -> Any:
        """Run the tool locally: async tools are awaited, sync tools run in a worker thread."""
        return await tool.execute_local(args)

    def __repr__(self) -> str:
        return "InProcessRunner()"

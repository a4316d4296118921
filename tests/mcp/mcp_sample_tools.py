"""Tools the MCP tests serve with `python -m jianmu_bt.mcp serve --tools mcp_sample_tools:...`."""

from __future__ import annotations

import os

import anyio

from jianmu_bt import tool


@tool(blocking=False, read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


@tool(blocking=False, read_only=True)
def describe_point(x: float, y: float) -> dict:
    """Return a point as a JSON object."""
    return {"x": x, "y": y, "norm": (x * x + y * y) ** 0.5}


@tool(blocking=False, read_only=True)
def fail(reason: str) -> str:
    """Always fail with the given reason."""
    raise ValueError(reason)


@tool(effect_tags=["file_write"], parallel_safe=False, blocking=False)
def save_note(text: str) -> str:
    """Pretend to write a note (declares the file_write effect)."""
    return f"saved {len(text)} characters"


@tool(effect_tags=["http"], blocking=False)
def fetch(url: str) -> str:
    """Pretend to fetch a URL (declares the http effect)."""
    return f"fetched {url}"


@tool(read_only=True)
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@tool(blocking=False, read_only=True)
def server_pid() -> int:
    """The server process id."""
    return os.getpid()


@tool(blocking=False)
def crash() -> str:
    """End the server process at once, mid-call."""
    os._exit(3)


ALL = [add, describe_point, fail, save_note, fetch, slow, server_pid, crash]

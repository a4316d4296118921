"""Tools for the server protocol tests: typed returns, images, progress, cancellation."""

from __future__ import annotations

import base64
import threading
from pathlib import Path

import anyio
from pydantic import BaseModel

from jianmu_bt import tool
from jianmu_bt.tools import report_progress

#: A 1x1 PNG.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e2215b"
        "2e0000000049454e44ae426082"
    )
).decode()


class Point(BaseModel):
    """A point in the plane."""

    x: int
    y: int


@tool(blocking=False, read_only=True)
def square(x: int) -> int:
    """Square a number."""
    return x * x


@tool(blocking=False, read_only=True)
def mirror(x: int, y: int) -> Point:
    """Swap the coordinates."""
    return Point(x=y, y=x)


@tool(blocking=False, read_only=True)
def words(text: str) -> list[str]:
    """Split text into words."""
    return text.split()


@tool(blocking=False, read_only=True)
def untyped(text: str):  # no return type, on purpose
    """Echo the text (no declared return type)."""
    return text


@tool(blocking=False, read_only=True)
def picture(caption: str) -> list:
    """A picture and its caption."""
    return [{"type": "image", "data": PNG, "mimeType": "image/png"}, caption]


@tool
async def count_async(n: int) -> int:
    """Count to n, reporting progress at each step."""
    for i in range(1, n + 1):
        report_progress(i, n, f"step {i}")
        await anyio.sleep(0.01)
    return n


@tool(blocking=True)
def count_in_thread(n: int) -> str:
    """Count to n in a worker thread, reporting progress at each step."""
    for i in range(1, n + 1):
        report_progress(i, n, f"thread step {i}")
    return threading.current_thread().name


@tool(blocking=False)
def flood(n: int) -> int:
    """Report progress n times without pausing, then once going backwards."""
    for i in range(n):
        report_progress(i, None, None)
    report_progress(0, None, "backwards")
    return n


@tool
async def wait_for_cancel(marker: str) -> str:
    """Write 'started' to marker, wait; write 'cancelled' when cancelled."""
    path = Path(marker)
    path.write_text("started")
    try:
        await anyio.sleep(60)
    except anyio.get_cancelled_exc_class():
        path.write_text("cancelled")
        raise
    return "finished"


@tool
async def run_child(marker: str) -> str:
    """Run `sleep 60` as a child process; its pid goes to marker."""
    async with await anyio.open_process(["sleep", "60"]) as process:
        Path(marker).write_text(str(process.pid))
        try:
            await process.wait()
        finally:
            with anyio.CancelScope(shield=True):
                process.kill()
                await process.wait()
    return "child ended"


ALL = [
    square,
    mirror,
    words,
    untyped,
    picture,
    count_async,
    count_in_thread,
    flood,
    wait_for_cancel,
    run_child,
]

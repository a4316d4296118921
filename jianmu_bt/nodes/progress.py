"""Progress of a running tool call as `tool.progress` run events.

A tool reports progress with `report_progress(done, total, message)` (an MCP tool forwards its
server's progress notifications the same way); the node running the call installs the sink made
here with `enter_call(key, sink)`, and each report becomes one event:

    tool.progress  node, tool, call_id, progress, total, message

Subscribers (the `--watch` view, a trace file) are not thread-safe, and a sync tool reports from
a worker thread: a report from another thread is handed to the event loop the call started in.
A call's first MAX_EVENTS_PER_CALL reports become events, so a server that floods progress
notifications cannot flood the trace.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading

from jianmu_bt.runtime.events import EventBus
from jianmu_bt.tools.call_context import ProgressSink

PROGRESS_EVENT = "tool.progress"
"""The type of the run event a progress report becomes."""

MAX_EVENTS_PER_CALL = 1000
"""Reports of one call that become events; later ones are dropped (a flood stays bounded)."""


def progress_events(
    events: EventBus | None, node: str, tool: str, call_id: str | None
) -> ProgressSink | None:
    """A sink that emits `tool.progress` for the call (None when there is no event bus, or
    nobody listens to it as the call starts: then the reports cost nothing).

    Made in the task that runs the call: reports from that thread are emitted at once, reports
    from other threads are scheduled on the call's event loop (dropped once it has closed).
    """
    if events is None or not events.active:
        return None
    owner = threading.get_ident()
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None

    def emit(progress: float, total: float | None, message: str | None) -> None:
        events.emit(
            PROGRESS_EVENT,
            node=node,
            tool=tool,
            call_id=call_id,
            progress=progress,
            total=total,
            message=message,
        )

    reports = itertools.count(1)

    def sink(progress: float, total: float | None, message: str | None) -> None:
        if next(reports) > MAX_EVENTS_PER_CALL:
            return
        if threading.get_ident() == owner or loop is None:
            emit(progress, total, message)
            return
        # A closed loop (RuntimeError): the call is over and nobody listens any more.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(emit, progress, total, message)

    return sink


__all__ = ["MAX_EVENTS_PER_CALL", "PROGRESS_EVENT", "progress_events"]

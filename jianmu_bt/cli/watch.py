"""`jianmu run --watch`: a live view of the tree's node statuses while it runs.

On a terminal that understands ANSI escapes the view is redrawn in place (the cursor moves back
over the previous drawing), at most every `interval` seconds and once more at the end, with the
latest tool, guard and LLM activity under the tree. Anywhere else (a pipe, a log file,
TERM=dumb) it is plain text: a fresh snapshot of the tree after each change (throttled the same
way, the last one always printed) and each activity line as it happens (a call's progress only
when it moved by 10% or reached its total), so nothing depends on cursor movement.
"""

from __future__ import annotations

import os
import shutil
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from jianmu_bt.cli.activity import describe_event

#: Seconds between two redraws on a terminal, and between two snapshots in plain mode.
TERMINAL_INTERVAL = 0.1
PLAIN_INTERVAL = 0.5
#: Activity lines kept under the tree on a terminal.
ACTIVITY_LINES = 6
#: In plain mode, a call's progress is printed when it moved by this share (10%).
PROGRESS_STEP = 0.1


def is_live_terminal(stream: TextIO) -> bool:
    """True when `stream` is a terminal that can redraw in place (not a pipe, not TERM=dumb)."""
    isatty = getattr(stream, "isatty", None)
    if not callable(isatty) or not isatty():
        return False
    return os.environ.get("TERM", "") not in ("", "dumb")


class WatchView:
    """A run-event subscriber that draws the tree's statuses to `stream` (see the module)."""

    def __init__(
        self,
        root: Any,
        stream: TextIO,
        *,
        live: bool | None = None,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.root = root
        self.stream = stream
        self.live = is_live_terminal(stream) if live is None else live
        self.interval = (
            interval
            if interval is not None
            else (TERMINAL_INTERVAL if self.live else PLAIN_INTERVAL)
        )
        self.clock = clock
        self.started = clock()
        self.tick = 0
        self.draws = 0
        self._dirty = True
        self._last_draw = float("-inf")
        self._drawn_lines = 0
        self._activity: deque[str] = deque(maxlen=ACTIVITY_LINES)
        self._progress_of: Any = None  # the call whose progress is the last activity line
        self._printed_progress: dict[Any, float] = {}  # plain mode: per call, last printed

    def __call__(self, event: Any) -> None:
        if event.type == "node.status":
            self._dirty = True
        elif event.type == "tree.tick":
            self.tick = int(event.data.get("tick", self.tick))
            ended = event.data.get("status") in ("SUCCESS", "FAILURE")  # finish() draws that one
            if not ended and self._dirty and self.clock() - self._last_draw >= self.interval:
                self.draw()
        line = describe_event(event)
        if line is not None:
            if self.live:
                progress = event.type == "tool.progress"
                if progress and self._progress_of == event.data.get("call_id") and self._activity:
                    self._activity.pop()  # a call's latest progress replaces its previous one
                self._progress_of = event.data.get("call_id") if progress else None
                self._activity.append(line)
                if progress and self.clock() - self._last_draw >= self.interval:
                    self.draw()  # no tick comes while a call runs: show its progress now
            elif event.type != "tool.progress" or self._progress_moved(event.data):
                self._write([f"  > {line}"])
        if event.type in ("tool.call.completed", "tool.call.failed"):
            self._printed_progress.pop(event.data.get("call_id"), None)

    def _progress_moved(self, data: Mapping[str, Any]) -> bool:
        """Plain mode prints a call's progress report only when it moved by `PROGRESS_STEP`
        (of the total, or of the last printed value when there is no total) since the last
        one printed, and its last report (progress reaching the total)."""
        call = data.get("call_id")
        try:
            progress = float(data.get("progress") or 0.0)
            total = float(data["total"]) if data.get("total") else None
        except (TypeError, ValueError):
            return True
        last = self._printed_progress.get(call)
        if total is not None:
            moved = last is None or progress >= total or progress - last >= PROGRESS_STEP * total
        else:
            moved = last is None or progress - last >= PROGRESS_STEP * abs(last)
        if moved:
            self._printed_progress[call] = progress
        return moved

    def finish(self, statuses: Mapping[str, Any] | None = None) -> None:
        """The last drawing, with the statuses the run ended with (a halt resets the nodes)."""
        self.draw(statuses, final=True)

    def draw(self, statuses: Mapping[str, Any] | None = None, *, final: bool = False) -> None:
        """Draw the tree now (current statuses unless given; the last drawing says so)."""
        elapsed = self.clock() - self.started
        state = "finished" if final else "running"
        header = f"-- {self.root.name}: {state}, tick {self.tick}, {elapsed:.2f}s --"
        from jianmu_bt.viz import status_lines  # the display layer loads when a view draws

        lines = [header, *status_lines(self.root, statuses)]
        if self.live:
            lines = self._fit(lines + [f"  > {line}" for line in self._activity])
            if self._drawn_lines:
                # Move to the start of the previous drawing and clear from there down.
                self.stream.write(f"\x1b[{self._drawn_lines}F\x1b[J")
            self._drawn_lines = len(lines)
        self._write(lines)
        self._dirty = False
        self._last_draw = self.clock()
        self.draws += 1

    def _fit(self, lines: list[str]) -> list[str]:
        # Lines that wrap or scroll off the screen would break the cursor arithmetic.
        size = shutil.get_terminal_size()
        width, height = max(size.columns - 1, 20), max(size.lines - 2, 5)
        if len(lines) > height:
            hidden = len(lines) - height + 1
            lines = [*lines[: height - 1], f"... {hidden} more line(s)"]
        return [line[:width] for line in lines]

    def _write(self, lines: list[str]) -> None:
        self.stream.write("\n".join(lines) + "\n")
        self.stream.flush()

"""The batch's progress line on stderr: done / failed / paused, rate and ETA.

On a terminal the line is redrawn in place (at most ten times a second); otherwise a plain line
is printed now and then (every `every` seconds) and once at the end, so logs stay readable.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import TextIO

#: Which count each result status goes to.
BUCKETS = {
    "succeeded": "done",
    "failed": "failed",
    "error": "failed",
    "invalid": "invalid",
    "paused": "paused",
}


class Progress:
    """Counts results as they come and shows them on `stream`."""

    def __init__(self, total: int, stream: TextIO | None, every: float = 5.0) -> None:
        self.total = total
        self.stream = stream
        self.counts: Counter[str] = Counter()
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())
        self.every = 0.1 if self.tty else every
        self.started = time.monotonic()
        self._shown = self.started
        self._ran = 0  # results of runs made now (not recorded before), for the rate

    def start(self) -> None:
        """The workers are up: the rate counts from now (not from Ray's start-up)."""
        self.started = time.monotonic()

    def add(self, status: str, recorded: bool = False) -> None:
        """Count one result (`recorded`: taken from the store, not run now)."""
        self.counts[BUCKETS.get(status, "failed")] += 1
        if recorded:
            self.counts["skipped"] += 1
        elif status != "invalid":
            self._ran += 1
        now = time.monotonic()
        if now - self._shown >= self.every:
            self._shown = now
            self._show(final=False)

    @property
    def seen(self) -> int:
        """Inputs accounted for so far."""
        return sum(self.counts[b] for b in ("done", "failed", "invalid", "paused"))

    def line(self) -> str:
        """The progress text: counts, rate and ETA."""
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self._ran / elapsed
        left = max(self.total - self.seen, 0)
        eta = f"{left / rate:.0f}s" if rate > 0 and left else ("0s" if not left else "?")
        c = self.counts
        text = (
            f"batch: {self.seen}/{self.total} | done {c['done']}, failed {c['failed']}, "
            f"paused {c['paused']}"
        )
        if c["invalid"]:
            text += f", invalid {c['invalid']}"
        if c["skipped"]:
            text += f" ({c['skipped']} recorded before)"
        return f"{text} | {rate:.1f} runs/s | ETA {eta}"

    def _show(self, final: bool) -> None:
        if self.stream is None:
            return
        if self.tty:
            self.stream.write("\r\x1b[K" + self.line() + ("\n" if final else ""))
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def finish(self) -> None:
        """Show the final counts (always)."""
        self._show(final=True)

"""Shared parts of the viewer tests: a tool the test opens like a gate, a tree that uses it and
a held call, a running viewer, and the check that nothing is left running."""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from jianmu_bt.tools import tool
from jianmu_bt.viewer import ViewerServer

REPO = Path(__file__).resolve().parents[2]
GATE = threading.Event()
#: How long a test waits for anything (a status on the page, a line from a process).
PATIENCE = 30.0


@tool
def wait_gate(label: str) -> str:
    """Wait until the test opens the gate, then say so."""
    if not GATE.wait(PATIENCE):
        raise TimeoutError("the test never opened the gate")
    return f"passed {label}"


GATED = """
version: 1
name: gated
state:
  first: {type: string}
  second: {type: string}
tools: [wait_gate, calculator]
guard: {approve: [calculator]}
root:
  sequence:
    name: Main
    children:
      - tool: {name: Wait, tool: wait_gate, arguments: {label: one}, output: first}
      - tool: {name: Compute, tool: calculator, arguments: {expression: "6 * 7"}, output: second}
"""


def load_gated(tmp_path: Path):
    """The gated tree, loaded from a file in `tmp_path` (the gate closed)."""
    from jianmu_bt.loader import load_tree

    GATE.clear()
    path = tmp_path / "gated.yaml"
    path.write_text(GATED)
    return load_tree(path, tools=[wait_gate])


def auth(server: ViewerServer) -> dict[str, str]:
    """The header every `/api/` request of `server` needs."""
    return {"X-Jianmu-Token": server.token}


def viewer_threads() -> list[threading.Thread]:
    """Viewer server threads still alive."""
    return [t for t in threading.enumerate() if t.name == "jianmu-viewer" and t.is_alive()]


@contextlib.contextmanager
def serving(source, **options) -> Iterator[ViewerServer]:
    """A started viewer for `source`; stopped (and checked stopped) afterwards."""
    server = ViewerServer(source, **options).start()
    try:
        yield server
    finally:
        server.stop()
        source.close()
        assert viewer_threads() == []


def jianmu_process(*args: str | Path, cwd: Path) -> subprocess.Popen[str]:
    """`python -m jianmu_bt.cli ARGS` started (not waited for), its output piped as text."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "dumb", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "jianmu_bt.cli", *map(str, args)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


class Lines:
    """The lines a process writes to one of its pipes, read by a thread of their own, so a test
    waits for a line with a timeout instead of blocking on the pipe."""

    def __init__(self, stream) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream) -> None:
        for line in stream:
            self._queue.put(line)
        self._queue.put(None)

    def until(self, marker: str) -> str:
        """The first line (from now) that contains `marker`; AssertionError after PATIENCE."""
        while True:
            try:
                line = self._queue.get(timeout=PATIENCE)
            except queue.Empty:
                raise AssertionError(f"{marker!r} not seen in {self.seen}") from None
            if line is None:
                raise AssertionError(f"the stream ended before {marker!r}: {self.seen}")
            self.seen.append(line)
            if marker in line:
                return line

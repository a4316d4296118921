"""Ends a local Ray whose driver died: run as a script by `start_local_ray`, never imported.

`python ray_watchdog.py DRIVER_PID TEMP_DIR` reads its standard input, a pipe whose other end
only the driver holds. While the driver lives, it notes every second which processes Ray runs
for it: the driver's children whose command line names TEMP_DIR (the GCS, the raylet, the
monitors) and everything below them (agents, workers). The driver's `stop()` writes `bye` and
closes the pipe after `ray.shutdown()`: the watchdog exits. End of input without `bye` means the
driver died (`kill -9`, a crash): the noted processes that still run the same command are
killed with SIGKILL and TEMP_DIR is removed. It runs in a session of its own, so a signal to the
driver's process group does not end it first.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import threading
from pathlib import Path

#: Seconds between two looks at the driver's Ray processes.
LOOK_SECONDS = 1.0


def _processes() -> dict[int, tuple[int, bytes]]:
    """Every live process: pid -> (parent pid, command line)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z":
            found[int(entry.name)] = (int(fields[1]), cmdline)
    return found


def ray_processes(driver: int, folder: str) -> dict[int, bytes]:
    """The processes of the driver's Ray: its children naming `folder`, and their descendants."""
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    todo = [p for p in children.get(driver, []) if folder.encode() in table[p][1]]
    found: dict[int, bytes] = {}
    while todo:
        pid = todo.pop()
        if pid not in found and pid != os.getpid():
            found[pid] = table[pid][1]
            todo.extend(children.get(pid, []))
    return found


def end(known: dict[int, bytes], folder: str) -> None:
    """SIGKILL the known processes still running the command they ran; remove `folder`."""
    table = _processes()
    for pid, cmdline in known.items():
        if pid in table and table[pid][1] == cmdline:  # not a new process under a reused pid
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str]) -> int:
    """Watch the driver until its pipe ends; clean up unless it said `bye`."""
    driver, folder = int(argv[1]), argv[2]
    said: list[bytes] = []
    ended = threading.Event()

    def read() -> None:
        said.append(sys.stdin.buffer.read())
        ended.set()

    threading.Thread(target=read, daemon=True).start()
    known: dict[int, bytes] = {}
    while True:
        known.update(ray_processes(driver, folder))
        if ended.wait(LOOK_SECONDS):
            break
    if b"bye" not in b"".join(said):
        end(known, folder)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""A `jianmu batch` killed with SIGKILL leaves nothing running, and its local Ray listens on the
loopback address only.

Each test starts `jianmu batch` as a process of its own, waits until runs are under way, notes
every process below it (pool workers and the resource tracker; or Ray's GCS, raylet, agents and
workers, and the watchdog), kills it with SIGKILL and waits (bounded) for all of them to end.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from batch_helpers import import_ray, wait_for

TOOLS = '''
import os, pathlib, time
from jianmu_bt.tools import tool

FOLDER = pathlib.Path({folder!r})


@tool
def slow(x: int) -> int:
    """Mark the call, wait a little, give x + 1."""
    (FOLDER / f"ran-{{x}}-{{os.getpid()}}").write_text("")
    time.sleep(0.3)
    return x + 1
'''

TREE = """
version: 1
name: dying
state:
  x: {type: integer, input: true}
  y: {type: integer}
tools: ["dyingtools:slow"]
root:
  sequence:
    name: Main
    children:
      - tool: {name: Slow, tool: slow, arguments: {x: "{x}"}, output: y}
"""


def _table() -> dict[int, tuple[int, str, bytes]]:
    """Live processes: pid -> (parent pid, start time, command line)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if fields[0] != "Z":
                found[int(entry.name)] = (int(fields[1]), fields[19], cmdline)
    return found


def descendants(root: int) -> dict[int, tuple[str, bytes]]:
    """The live processes below `root`: pid -> (start time, command line)."""
    table = _table()
    children: dict[int, list[int]] = {}
    for pid, (parent, _, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found: dict[int, tuple[str, bytes]] = {}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if pid not in found and pid in table:
            found[pid] = table[pid][1:]
            todo.extend(children.get(pid, []))
    return found


def listening(pids: set[int]) -> list[str]:
    """The addresses (ip:port, hex as /proc/net shows them) the processes listen on."""
    inodes = set()
    for pid in pids:
        try:
            links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
        except OSError:
            continue
        inodes.update(link[8:-1] for link in links if link.startswith("socket:["))
    found = []
    for table in ("tcp", "tcp6"):
        for row in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = row.split()
            if fields[9] in inodes and fields[3] == "0A":  # LISTEN
                found.append(fields[1])
    return found


LOOPBACK = ("0100007F:", "0000000000000000FFFF00000100007F:", "00000000000000000000000001000000:")


def still_alive(noted: dict[int, tuple[str, bytes]]) -> dict[int, bytes]:
    """The noted processes that still run (same pid and start time)."""
    table = _table()
    return {p: c for p, (t, c) in noted.items() if p in table and table[p][1] == t}


def start_batch(tmp_path: Path, *options: str) -> tuple[subprocess.Popen[bytes], Path]:
    """`jianmu batch` of 40 slow runs in its own process; the folder its tool marks calls in."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "dyingtools.py").write_text(TOOLS.format(folder=str(folder)))
    (folder / "tree.yaml").write_text(TREE)
    (folder / "inputs.jsonl").write_text("".join(f'{{"x": {i}}}\n' for i in range(40)))
    command = [sys.executable, "-m", "jianmu_bt.cli", "batch", "tree.yaml", "inputs.jsonl"]
    command += ["--workers", "2", "--store", str(tmp_path / "runs.db"), "--out", "out.jsonl"]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    process = subprocess.Popen(
        [*command, *options],
        cwd=folder,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    return process, folder


def kill_mid_batch(
    process: subprocess.Popen[bytes], folder: Path, before_kill: Any = None
) -> dict[int, tuple[str, bytes]]:
    """Wait until runs are under way, note the batch's processes, SIGKILL the batch."""
    try:
        wait_for(lambda: list(folder.glob("ran-*")) or process.poll() is not None, 180)
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        time.sleep(1.5)  # every process the batch starts is up (and a watchdog has looked)
        noted = descendants(process.pid)
        if before_kill is not None:
            before_kill()
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        if process.stderr:
            process.stderr.close()
    return noted


def test_a_killed_pool_batch_leaves_no_worker_or_resource_tracker(tmp_path):
    process, folder = start_batch(tmp_path)
    noted = kill_mid_batch(process, folder)
    commands = b" ".join(c for _, c in noted.values())
    assert b"spawn_main" in commands and b"resource_tracker" in commands  # what is checked
    try:
        wait_for(lambda: not still_alive(noted), 30)
    except AssertionError:
        left = {p: c.replace(b"\0", b" ")[:120] for p, c in still_alive(noted).items()}
        pytest.fail(f"processes of the killed batch still run: {left}")


@pytest.fixture(scope="module")
def killed_ray_batch(tmp_path_factory):
    """A `jianmu batch --ray` killed mid-batch: its processes and what they listened on."""
    import_ray()
    process, folder = start_batch(tmp_path_factory.mktemp("ray"), "--ray")
    seen: dict[str, list[str]] = {}

    def note_sockets() -> None:
        seen["listening"] = listening(set(descendants(process.pid)))

    noted = kill_mid_batch(process, folder, before_kill=note_sockets)
    return noted, seen["listening"]


def test_a_local_ray_of_a_batch_listens_on_loopback_only(killed_ray_batch):
    _, sockets = killed_ray_batch
    assert sockets  # the GCS, the raylet, the agents... listen
    assert [s for s in sockets if not s.startswith(LOOPBACK)] == []


def test_a_killed_ray_batch_takes_its_local_ray_and_folder_with_it(killed_ray_batch):
    noted, _ = killed_ray_batch
    commands = [c.replace(b"\0", b" ").decode(errors="replace") for _, c in noted.values()]
    temp_dirs = {
        word.split("=", 1)[1] for c in commands for word in c.split() if "--temp-dir=" in word
    }
    assert any("raylet" in c for c in commands) and temp_dirs  # Ray was running
    try:
        wait_for(lambda: not still_alive(noted), 60)
    except AssertionError:
        left = {p: c.replace(b"\0", b" ")[:120] for p, c in still_alive(noted).items()}
        pytest.fail(f"processes of the killed batch's Ray still run: {left}")
    wait_for(lambda: not any(Path(d).exists() for d in temp_dirs), 30)

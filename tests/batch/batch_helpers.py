"""Trees, tool modules and inputs for the batch tests, written into a test's folder.

The tool module (a fresh name per test) is a real file next to the tree (the loader puts the
tree's folder on the path of every worker). Its tools leave evidence in the folder: `count`
appends one line per call to `calls.log`; `publish` is held for approval when 100 <= x < 1000;
`stall` writes `stall-<x>-<pid>` on its first call for an input `x >= 1000` and then waits (up
to 60 s) to be killed; a later call for that input returns at once.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from jianmu_bt.cli import main

TOOLS = '''
import os, pathlib, time
from jianmu_bt.tools import tool

FOLDER = pathlib.Path({folder!r})
PARENT = {parent}


def _parent_only():
    if PARENT and os.getpid() != PARENT:
        pid = os.getpid()
        raise ImportError(f"this module imports only in the test process (worker {{pid}})")


@tool
def count(x: int) -> int:
    """Count the call, give x + 1."""
    with open(FOLDER / "calls.log", "a") as log:
        log.write(f"{{x}}\\n")
    return x + 1


@tool(read_only=True)  # its marker files are evidence, not effects: it may run again
def stall(x: int) -> int:
    """Wait to be killed on the first call for x >= 1000; give 2 * x."""
    if x >= 1000 and not list(FOLDER.glob(f"stall-{{x}}-*")):
        (FOLDER / f"stall-{{x}}-{{os.getpid()}}").write_text("")
        time.sleep(60)
    if x < 0:
        raise ValueError("negative input")
    return 2 * x


@tool(effect_tags=["publish"])
def publish(y: int) -> str:
    """Publish y (the guard holds it for approval)."""
    return f"published {{y}}"


_parent_only()
'''

TREE = """
version: 1
name: batcher
state:
  x: {type: integer, input: true}
  y: {type: integer}
  z: {type: integer}
tools: ["{module}:count", "{module}:stall", "{module}:publish"]
guard: {approve: [publish]}
root:
  sequence:
    name: Main
    children:
      - tool: {name: Count, tool: count, arguments: {x: "{x}"}, output: y}
      - tool: {name: Stall, tool: stall, arguments: {x: "{x}"}, output: z}
      - selector:
          name: MaybePublish
          children:
            - condition: {name: NotHeld, check: "x < 100 or x >= 1000"}
            - tool: {name: Publish, tool: publish, arguments: {y: "{y}"}}
"""


def write_tree(folder: Path, parent_only: bool = False) -> Path:
    """The batch tree and its tool module in `folder`; `parent_only`: the module refuses to
    import in any process but this one (a worker cannot load the tree)."""
    parent = os.getpid() if parent_only else 0
    module = f"batchtools_{uuid.uuid4().hex[:10]}"  # a fresh name: this process imports it too
    (folder / f"{module}.py").write_text(TOOLS.format(folder=str(folder), parent=parent))
    tree = folder / "tree.yaml"
    tree.write_text(TREE.replace("{module}", module))
    return tree


def write_inputs(folder: Path, lines: Iterable[Any], name: str = "inputs.jsonl") -> Path:
    """An inputs file: dicts as JSON lines, strings as they are."""
    path = folder / name
    path.write_text("".join((v if isinstance(v, str) else json.dumps(v)) + "\n" for v in lines))
    return path


def batch(*args: Any) -> tuple[int, str]:
    """`jianmu batch ARGS` in this process: (exit status, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["batch", *map(str, args)])
    return code, err.getvalue()


def results(path: Path) -> dict[int, dict[str, Any]]:
    """The results file by input line (each line must appear once)."""
    found: dict[int, dict[str, Any]] = {}
    for text in path.read_text().splitlines():
        result = json.loads(text)
        assert result["line"] not in found, f"line {result['line']} reported twice"
        found[result["line"]] = result
    return found


def calls(folder: Path) -> Counter[int]:
    """How many times `count` ran for each input x."""
    log = folder / "calls.log"
    return Counter(int(v) for v in log.read_text().split()) if log.exists() else Counter()


def wait_for(check: Callable[[], Any], timeout: float = 60.0) -> Any:
    """Poll `check` until it gives something true (AssertionError after `timeout`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


def _live_parents() -> dict[int, int]:
    """Every live (non-zombie) process and its parent, from /proc."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    return parents


def children_of(pid: int) -> set[int]:
    """The live child processes of `pid` (from /proc)."""
    found = {child for child, parent in _live_parents().items() if parent == pid}
    return {p for p in found if b"resource_tracker" not in _cmdline(p)}


def descendants_of(pid: int) -> set[int]:
    """The live processes below `pid` (children, their children, ...), from /proc."""
    parents = _live_parents()
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _cmdline(pid: int) -> bytes:
    """The command line of `pid` (empty when it is gone). multiprocessing's resource tracker
    lives as long as the process that started a pool: it is not a leftover of a batch."""
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes()
    except OSError:
        return b""


def import_ray() -> Any:
    """The `ray` module; without it the calling test module is skipped, or fails when
    JIANMU_REQUIRE_RAY=1 (set by CI: the Ray tests must run there)."""
    import pytest

    try:
        import ray
    except ImportError as exc:
        if os.environ.get("JIANMU_REQUIRE_RAY") == "1":
            pytest.fail(f"JIANMU_REQUIRE_RAY=1 but Ray cannot be imported: {exc}", pytrace=False)
        pytest.skip("Ray is not installed (pip install 'jianmu-bt[ray]')", allow_module_level=True)
    return ray


def ray_processes() -> set[int]:
    """Live processes of any local Ray (raylet, GCS, workers, ...), from /proc."""
    marks = (b"raylet", b"gcs_server", b"ray::", b"default_worker.py", b"/ray/", b"ray.util")
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            command = _cmdline(int(entry.name))
            if any(mark in command for mark in marks) and _alive(int(entry.name)):
                found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"

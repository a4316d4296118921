"""Helpers shared by the sandbox tests: what a sandbox left behind, and whether Docker is usable.

A module of its own (not `conftest`): test modules import these by name, and `conftest` is a
name every test directory has, so importing from it picks whichever directory's came last.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import anyio

from jianmu_bt.sandbox.docker import DockerSandbox
from jianmu_bt.sandbox.local import LocalSandbox

ROOT = os.geteuid() == 0
IMAGE = os.environ.get("JIANMU_DOCKER_IMAGE", "jianmu-sandbox-python:test")
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: The line the `server_port` fixture's server greets every connection with.
GREETING = "hello from the host"


def docker_problem() -> str | None:
    """Why the Docker tests cannot run here (no SDK, no engine, no test image), else None."""
    try:
        import docker
    except ImportError:
        return "the docker SDK is not installed"
    try:
        client = docker.from_env(timeout=5)
        client.ping()
    except Exception as exc:
        return f"no Docker engine is reachable ({type(exc).__name__}: {exc})"
    try:
        client.images.get(IMAGE)
    except Exception:
        return f"the test image {IMAGE} is missing (run .ci/setup-docker.sh)"
    finally:
        client.close()
    return None


def sandbox_processes(sandbox: LocalSandbox) -> set[int]:
    """Live processes of `sandbox`: in one of its cgroups, or working in its workspace."""
    found = set()
    marker = f"jianmu-sandbox-{sandbox.id}-".encode()
    workspace = sandbox.workspace
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes()
            if stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3] == b"Z":
                continue  # exited, waiting to be reaped: not running
            in_cgroup = marker in Path(f"/proc/{entry}/cgroup").read_bytes()
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except (OSError, ValueError):
            continue
        if in_cgroup or cwd == workspace or cwd.startswith(workspace + "/"):
            found.add(int(entry))
    return found


def sandbox_cgroups(sandbox: LocalSandbox, root: Path = CGROUP_ROOT) -> list[Path]:
    """Cgroups `sandbox` created and has not removed.

    The walk tolerates directories that vanish under it: other sandboxes and containers remove
    their cgroups all the time, and a vanished directory holds nothing of ours.
    """
    marker = f"jianmu-sandbox-{sandbox.id}-"
    found: list[Path] = []
    stack = [str(root)]
    while stack:
        try:
            with os.scandir(stack.pop()) as listing:
                entries = list(listing)
        except OSError:  # removed (or unreadable) since it was listed: nothing to find there
            continue
        for entry in entries:
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue
            except OSError:
                continue
            if entry.name.startswith(marker):
                found.append(Path(entry.path))
            stack.append(entry.path)
    return found


def sandbox_containers(sandbox: DockerSandbox) -> list[Any]:
    """Containers (running or not) that `sandbox` created and has not removed."""
    import docker

    client = docker.from_env(timeout=10)
    try:
        return client.containers.list(all=True, filters={"label": f"jianmu.sandbox={sandbox.id}"})
    finally:
        client.close()


async def assert_nothing_left(sandbox: Any, within: float = 5.0) -> None:
    """No process, cgroup or container of `sandbox` outlives the call (waits briefly for exits)."""
    deadline = time.monotonic() + within
    while True:
        if isinstance(sandbox, DockerSandbox):
            left: Any = await anyio.to_thread.run_sync(sandbox_containers, sandbox)
        else:
            left = sandbox_processes(sandbox) | set(map(str, sandbox_cgroups(sandbox)))
        if not left or time.monotonic() > deadline:
            break
        await anyio.sleep(0.05)
    assert not left, f"left behind: {left}"

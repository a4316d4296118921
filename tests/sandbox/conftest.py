"""Fixtures for the sandbox tests: both sandboxes behind one factory, and leftover checks.

Docker tests need a reachable engine and the test image built by `.ci/setup-docker.sh`. Without
them they are skipped with the reason, unless JIANMU_REQUIRE_DOCKER=1 (set by CI), which turns
the skip into a failure.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from jianmu_bt.sandbox.docker import DockerSandbox
from jianmu_bt.sandbox.limits import SandboxLimits
from jianmu_bt.sandbox.local import LocalSandbox

ROOT = os.geteuid() == 0
IMAGE = os.environ.get("JIANMU_DOCKER_IMAGE", "jianmu-sandbox-python:test")


def _docker_problem() -> str | None:
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


@pytest.fixture(scope="session")
def docker_ready() -> None:
    """Skip (or, with JIANMU_REQUIRE_DOCKER=1, fail) when Docker cannot be used here."""
    problem = _docker_problem()
    if problem is None:
        return
    if os.environ.get("JIANMU_REQUIRE_DOCKER") == "1":
        pytest.fail(f"JIANMU_REQUIRE_DOCKER=1 but {problem}")
    pytest.skip(f"Docker tests skipped: {problem}")


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


def sandbox_cgroups(sandbox: LocalSandbox) -> list[Path]:
    """Cgroups `sandbox` created and has not removed."""
    return list(Path("/sys/fs/cgroup").glob(f"**/jianmu-sandbox-{sandbox.id}-*"))


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


Factory = Callable[..., Any]


@pytest.fixture(params=["local", "docker"])
async def make_sandbox(request: pytest.FixtureRequest) -> AsyncIterator[Factory]:
    """A factory of sandboxes of one kind (both kinds, one after the other); closes them all."""
    kind = request.param
    if kind == "docker":
        request.getfixturevalue("docker_ready")
    made: list[Any] = []

    def make(**limits: Any) -> Any:
        options = {"timeout": 20, **limits}
        warm = options.pop("warm", False)
        network = options.pop("network", None)
        if kind == "local":
            sandbox = LocalSandbox(
                SandboxLimits(**options), warm=warm, network=True if network is None else network
            )
        else:
            sandbox = DockerSandbox(
                IMAGE, SandboxLimits(**options), warm=warm, network=bool(network)
            )
        made.append(sandbox)
        return sandbox

    make.kind = kind  # type: ignore[attr-defined]
    yield make
    for sandbox in made:
        await sandbox.aclose()

"""Fixtures for the sandbox tests: both sandboxes behind one factory, and whether Docker is usable.

Docker tests need a reachable engine and the test image built by `.ci/setup-docker.sh`. Without
them they are skipped with the reason, unless JIANMU_REQUIRE_DOCKER=1 (set by CI), which turns
the skip into a failure. Helpers the tests import live in `sandbox_helpers`.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from sandbox_helpers import GREETING, IMAGE, docker_problem

from jianmu_bt.sandbox.docker import DockerSandbox
from jianmu_bt.sandbox.limits import SandboxLimits
from jianmu_bt.sandbox.local import LocalSandbox


@pytest.fixture(scope="session")
def docker_ready() -> None:
    """Skip (or, with JIANMU_REQUIRE_DOCKER=1, fail) when Docker cannot be used here."""
    problem = docker_problem()
    if problem is None:
        return
    if os.environ.get("JIANMU_REQUIRE_DOCKER") == "1":
        pytest.fail(f"JIANMU_REQUIRE_DOCKER=1 but {problem}")
    pytest.skip(f"Docker tests skipped: {problem}")


@pytest.fixture
def server_port() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that greets every connection with one line (GREETING)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(GREETING.encode() + b"\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


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

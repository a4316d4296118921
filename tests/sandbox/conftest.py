"""Fixtures for the sandbox tests: both sandboxes behind one factory, and whether Docker is usable.

Docker tests need a reachable engine and the test image built by `.ci/setup-docker.sh`. Without
them they are skipped with the reason, unless JIANMU_REQUIRE_DOCKER=1 (set by CI), which turns
the skip into a failure. Helpers the tests import live in `sandbox_helpers`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from sandbox_helpers import IMAGE, docker_problem

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

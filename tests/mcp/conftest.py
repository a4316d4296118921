"""Fixtures for the MCP tests (helpers live in mcp_test_support)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp_test_support import descendants


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    # Module scope, so module-scoped async fixtures can share one running server.
    return "asyncio"


@pytest.fixture(scope="module", autouse=True)
def no_leftover_processes() -> Iterator[None]:
    """Assert, after the module's other fixtures close, that no process it started is left.

    Autouse fixtures are set up first, so this one is torn down after every server fixture.
    """
    before = descendants()
    yield
    left = descendants() - before
    assert not left, f"processes left behind: {sorted(left)}"

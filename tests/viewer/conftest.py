"""Fixtures shared by the viewer tests."""

from __future__ import annotations

import pytest
from viewer_helpers import REPO, jianmu_process


@pytest.fixture(scope="session")
def quickstart_trace(tmp_path_factory):
    """The trace of a real `jianmu run trees/quickstart.yaml --trace` (written once)."""
    folder = tmp_path_factory.mktemp("quickstart-trace")
    trace = folder / "run.jsonl"
    process = jianmu_process(
        "run", REPO / "trees" / "quickstart.yaml", "--no-store", "--trace", trace, cwd=folder
    )
    assert process.wait(60) == 0, process.stderr.read()
    process.stdout.close()
    process.stderr.close()
    return trace

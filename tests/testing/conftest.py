"""Shared parts of the overlay tests: a small tree file with tool steps, an agent and a guard,
the plugin's fixtures (also registered by the `pytest11` entry point once installed), and a
check that no test leaves a thread running."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from overlay_helpers import TREE

from jianmu_bt.testing.plugin import jianmu_run, jianmu_tree  # noqa: F401  (the fixtures)


@pytest.fixture
def tree_file(tmp_path: Path) -> Path:
    """The shop tree, written to a temporary folder (its workspace)."""
    path = tmp_path / "shop.yaml"
    path.write_text(TREE, encoding="utf-8")
    (tmp_path / "note.txt").write_text("the real note", encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def no_thread_left() -> Iterator[None]:
    """Every thread a test started has ended shortly after it (trees closed, loops stopped)."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 5
    while True:
        left = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert not left, f"threads left running: {left}"

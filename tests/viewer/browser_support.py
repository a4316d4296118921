"""Shared parts of the browser tests: headless Chromium (the system's) through Playwright, one
browser per test module, and reading the page.

Importing this module skips the importing test module when Chromium or Playwright is missing,
unless JIANMU_REQUIRE_BROWSER=1 (set by CI), which makes that a failure. Test modules take the
`browser` and `page` fixtures from conftest.py (which use `CHROMIUM` from here).
"""

from __future__ import annotations

import os
import shutil

import pytest
from py_trees.common import Status
from viewer_helpers import PATIENCE

from jianmu_bt.viz.dot import STATUS_COLOURS

CHROMIUM = os.environ.get("JIANMU_CHROMIUM", "/usr/bin/chromium")


def _unavailable() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "no Playwright (pip install playwright)"
    if not shutil.which(CHROMIUM):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


if (_why := _unavailable()) is not None:
    if os.environ.get("JIANMU_REQUIRE_BROWSER") == "1":
        pytest.fail(f"JIANMU_REQUIRE_BROWSER=1 but {_why}", pytrace=False)
    pytest.skip(_why, allow_module_level=True)

WAIT_MS = PATIENCE * 1000


def status(page, name: str) -> str | None:
    """The status a node shows now (its `data-status`)."""
    return page.get_attribute(f"g.node[data-name='{name}']", "data-status")


def wait_status(page, name: str, wanted: str) -> None:
    """Wait until the node shows `wanted`, and check it is drawn in that status's colour."""
    page.wait_for_selector(f"g.node[data-name='{name}'][data-status='{wanted}']", timeout=WAIT_MS)
    fill = page.get_attribute(
        f"g.node[data-name='{name}'] :is(polygon, ellipse, path, rect) >> nth=0", "fill"
    )
    assert fill == STATUS_COLOURS[Status(wanted)], (name, wanted, fill)


def open_viewer(page, server) -> None:
    """Open the page as the printed URL does: with the token in the fragment."""
    page.goto(f"{server.url}#token={server.token}")
    page.wait_for_function("window.jianmuViewer && window.jianmuViewer.ready", timeout=WAIT_MS)


def forget_token(page) -> None:
    """Clear the page's token box (reads already made; actions now go without it)."""
    page.fill("#token", "")

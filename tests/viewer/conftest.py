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


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium for a browser test module (which imports `browser_support` first)."""
    from browser_support import CHROMIUM
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser):
    """A fresh page (its own context); fails the test on any error of the page's script."""
    # bypass_csp: Playwright's wait_for_function evaluates strings, which the page's policy
    # forbids; the page's own rendering is then checked without the policy's help.
    context = browser.new_context(viewport={"width": 1400, "height": 820}, bypass_csp=True)
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    yield opened
    context.close()
    assert errors == []

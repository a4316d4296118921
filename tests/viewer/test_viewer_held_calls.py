"""A held call on the viewer's page is shown whole before anyone approves it: long arguments
folded behind "show all" (Approve waits until they were shown), every control and invisible
formatting character escaped, markup shown as text, and why the call is held. Headless Chromium
(`browser_support`: skipped without it, unless JIANMU_REQUIRE_BROWSER=1)."""

from __future__ import annotations

import json
import threading
import unicodedata
from pathlib import Path

import httpx
import pytest
from browser_support import WAIT_MS, open_viewer
from viewer_helpers import PATIENCE, auth, serving

from jianmu_bt.cli.call_text import escape_hidden
from jianmu_bt.loader import load_tree
from jianmu_bt.tools import tool
from jianmu_bt.viewer import live_source

pytestmark = pytest.mark.timeout(120)

TRICKS = "pay \u202eevil\u202c \x1b[2J\x00\x7f\x9b\u200b\ufeff\u061c <b>bold</b> done"
LONG = "".join(f"<{n:04d}>" for n in range(60))  # 360 characters, each piece unique
ARGUMENTS = {"note": TRICKS, "payload": LONG}
WHY = "held: transfer runs only after a reviewer approves the call (policy approval_required)"

TREE = f"""
version: 1
name: held
state:
  out: {{type: string}}
tools: [transfer]
guard: {{approve: [transfer]}}
root:
  tool: {{name: Pay, tool: transfer, output: out, arguments: {{
    note: "{TRICKS.encode("unicode_escape").decode()}", payload: "{LONG}"}}}}
"""


@tool
def transfer(note: str, payload: str) -> str:
    """Pretend to move money."""
    return "moved"


def shown_by_the_page(arguments: object) -> str:
    """The arguments as the page writes them: one line of JSON, hidden characters escaped."""
    return escape_hidden(json.dumps(arguments, ensure_ascii=False, separators=(",", ":")))


def raw_hidden(text: str) -> list[str]:
    """Control and formatting characters shown as they are (the page's own newlines aside)."""
    return sorted({ch for ch in text if ch != "\n" and unicodedata.category(ch) in ("Cc", "Cf")})


def test_long_arguments_are_folded_behind_show_all_and_approve_waits_for_them(
    page, tmp_path: Path
) -> None:
    path = tmp_path / "held.yaml"
    path.write_text(TREE)
    tree = load_tree(path, tools=[transfer])
    source = live_source(tree)
    results: list = []
    full = shown_by_the_page(ARGUMENTS)
    assert len(full) > 300 and "\\u202e" in full and "\\u001b[2J" in full and "\\u0000" in full
    with serving(source) as server:
        open_viewer(page, server)
        worker = threading.Thread(target=lambda: results.append(tree.run(timeout=PATIENCE)))
        worker.start()
        try:
            page.wait_for_selector("#held-list .call", timeout=WAIT_MS)
            assert page.inner_text("#held-list .why") == WHY
            assert page.inner_text("#held-list .arguments") == full[:300] + "\u2026"
            toggle = page.inner_text("#held-list .show-all")
            assert toggle == f"show all ({len(full) - 300} more characters)"
            assert page.is_disabled("#held-list .approve")  # not before it was all shown
            page.click("#held-list .show-all")
            assert page.inner_text("#held-list .arguments") == full
            assert page.inner_text("#held-list .show-all") == "show less"
            assert raw_hidden(page.inner_text("#held-list")) == []
            assert page.locator("#held-list b").count() == 0  # markup shown as text
            pending = httpx.get(server.url + "api/pending", headers=auth(server)).json()
            assert pending["pending"][0]["policy"] == "approval_required"
            page.click("#held-list .approve")
            worker.join(PATIENCE)
        finally:
            for record in tree.pending_approvals():
                tree.reject(record.call_id, "the test ended")
            worker.join(PATIENCE)
    tree.close()
    assert results[0].status.name == "SUCCESS"


def test_short_arguments_are_shown_whole_at_once(page, tmp_path: Path) -> None:
    path = tmp_path / "held.yaml"
    path.write_text(TREE.replace(LONG, "short"))
    tree = load_tree(path, tools=[transfer])
    source = live_source(tree)
    results: list = []
    with serving(source) as server:
        open_viewer(page, server)
        worker = threading.Thread(target=lambda: results.append(tree.run(timeout=PATIENCE)))
        worker.start()
        try:
            page.wait_for_selector("#held-list .call", timeout=WAIT_MS)
            shown = shown_by_the_page({"note": TRICKS, "payload": "short"})
            assert page.inner_text("#held-list .arguments") == shown
            assert page.locator("#held-list .show-all").count() == 0
            assert page.is_enabled("#held-list .approve")
            page.fill("#held-list .reason", "no")
            page.click("#held-list .deny")
            worker.join(PATIENCE)
        finally:
            for record in tree.pending_approvals():
                tree.reject(record.call_id, "the test ended")
            worker.join(PATIENCE)
    tree.close()
    assert results[0].status.name == "FAILURE"

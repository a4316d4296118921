"""On the viewer's page a held call can be approved with edited arguments: "Edit" opens its
arguments as pretty JSON (hidden characters written as JSON escapes, which read back as the same
characters), "Approve edited" runs the call with the text as edited; an edit the run refuses is
said next to the call, which stays held. Headless Chromium (`browser_support`: skipped without
it, unless JIANMU_REQUIRE_BROWSER=1)."""

from __future__ import annotations

import json
import threading
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import WAIT_MS, open_viewer
from viewer_helpers import PATIENCE, serving

from jianmu_bt.loader import load_tree
from jianmu_bt.tools import tool
from jianmu_bt.viewer import live_source

pytestmark = pytest.mark.timeout(120)

#: A note that would hide or reorder text if shown as it is.
TRICKS = "pay \u202eevil\u202c \x1b[2J\x7f\u200b\U000e0001 <b>bold</b> done"
PAID: list[tuple[int, str]] = []

TREE = f"""
version: 1
name: bill
state:
  receipt: {{type: string}}
tools: [pay]
guard: {{approve: [pay]}}
root:
  tool: {{name: Pay, tool: pay, output: receipt, arguments: {{
    amount: 5000, note: "{TRICKS.encode("unicode_escape").decode()}"}}}}
"""


@tool
def pay(amount: int, note: str) -> str:
    """Pretend to pay an amount."""
    PAID.append((amount, note))
    return f"paid {amount}"


class HeldPage:
    """The page of a live run waiting on its held `pay` call."""

    def __init__(self, page: Any, tree: Any, server: Any) -> None:
        self.page, self.tree = page, tree
        self.results: list[Any] = []
        open_viewer(page, server)
        self.worker = threading.Thread(
            target=lambda: self.results.append(tree.run(timeout=PATIENCE))
        )
        self.worker.start()
        page.wait_for_selector("#held-list .call", timeout=WAIT_MS)

    def edit(self, text: str) -> None:
        """Open the editor (if closed), put `text` in it and send it."""
        if not self.page.is_visible("#held-list .edit-arguments"):
            self.page.click("#held-list .edit")
        self.page.fill("#held-list .edit-arguments", text)
        self.page.click("#held-list .approve-edited")

    def refusal(self, status: int) -> str:
        """The refusal shown next to the call, once it says `status`."""
        self.page.wait_for_function(
            f"document.querySelector('#held-list .edit-error').textContent.startsWith('{status}:')",
            timeout=WAIT_MS,
        )
        return self.page.inner_text("#held-list .edit-error")


@pytest.fixture
def held(page, tmp_path: Path) -> Iterator[HeldPage]:
    PAID.clear()
    path = tmp_path / "bill.yaml"
    path.write_text(TREE)
    tree = load_tree(path, tools=[pay])
    source = live_source(tree)
    with serving(source) as server:
        shown = HeldPage(page, tree, server)
        try:
            yield shown
        finally:
            for record in tree.pending_approvals():
                tree.reject(record.call_id, "the test ended")
            shown.worker.join(PATIENCE)
    tree.close()


def test_approve_edited_runs_the_call_with_the_arguments_as_edited(held) -> None:
    held.page.click("#held-list .edit")
    text = held.page.input_value("#held-list .edit-arguments")
    # Pretty JSON, every hidden character an escape that JSON reads back as itself.
    assert text.startswith('{\n  "amount": 5000,\n  "note": "pay \\u202eevil\\u202c')
    assert "\\udb40\\udc01" in text and "\\u001b[2J" in text and "\\u007f" in text
    assert [ch for ch in text if ch != "\n" and unicodedata.category(ch) in ("Cc", "Cf")] == []
    assert json.loads(text) == {"amount": 5000, "note": TRICKS}
    held.edit(text.replace("5000", "50"))
    held.worker.join(PATIENCE)
    assert held.results[0].status.name == "SUCCESS"
    assert PAID == [(50, TRICKS)]
    (record,) = held.tree.guard.approvals.records()
    assert record.decided_by == "viewer" and record.approved_arguments["amount"] == 50


def test_a_refused_edit_is_said_next_to_the_call_which_stays_held(held) -> None:
    held.edit('{"amount": "lots", "note": "x"}')
    said = held.refusal(422)
    assert "do not fit pay's schema" in said and "arguments.amount" in said
    held.edit('{amount: 5, "note": "x"}')
    assert held.refusal(400).startswith("400: the edited arguments are not JSON at line 1 column 2")
    assert len(held.tree.pending_approvals()) == 1 and PAID == []
    assert held.page.locator("#held-list .call").count() == 1  # still offered for a decision
    held.edit('{"amount": 7, "note": "fine"}')  # the same editor: a good edit now goes through
    held.worker.join(PATIENCE)
    assert held.results[0].status.name == "SUCCESS"
    assert PAID == [(7, "fine")]

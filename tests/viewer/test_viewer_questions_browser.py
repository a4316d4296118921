"""On the viewer's page a live run's questions are answered through forms built from their
fields (a choice as radio buttons or a select, a number, a yes/no, free text; defaults filled
in), an external call's result is given as JSON, and a held call can be answered in its place
("Respond"). What the run wrote is shown as text, long text folded behind "show all"; a value
the run refuses is said next to the item, which stays open. Headless Chromium
(`browser_support`: skipped without it, unless JIANMU_REQUIRE_BROWSER=1)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser_support import WAIT_MS, open_viewer
from viewer_helpers import PATIENCE, serving

from jianmu_bt.loader import load_tree
from jianmu_bt.tools import tool
from jianmu_bt.tools.external import ExternalTool
from jianmu_bt.viewer import live_source

pytestmark = pytest.mark.timeout(120)

REPLY = "Already paid by card."
PAID: list[int] = []
#: A question that would be markup if shown as HTML, with a character that reorders text
#: (U+202E, written in the file as YAML's escape), and long enough to be folded.
LONG = "".join(f"[{n:03d}]" for n in range(70))  # 350 characters
ASKED = f"Which plan? <b>bold</b> \u202eevil {LONG}"
#: The question as the page shows it (and as the file writes it): the character as an escape.
SHOWN = ASKED.replace("\u202e", "\\u202e")

ci_result = ExternalTool(
    "ci_result",
    "Start the CI pipeline on a branch; its verdict comes back when the pipeline ends.",
    parameters={"type": "object", "properties": {"branch": {"type": "string"}}},
    output_schema={
        "type": "object",
        "properties": {"passed": {"type": "boolean"}},
        "required": ["passed"],
    },
)


@tool
def pay(amount: int) -> str:
    """Pretend to pay an amount."""
    PAID.append(amount)
    return f"paid {amount}"


CHOOSING = f"""
version: 1
name: choosing
state:
  plan: {{type: string}}
  verdict: {{type: dict}}
  receipt: {{type: string}}
tools: [ci_result, pay]
guard: {{approve: [pay]}}
root:
  sequence:
    name: Main
    children:
      - ask: {{name: PickPlan, question: "{SHOWN}", choices: [careful, fast], output: plan}}
      - tool: {{name: CI, tool: ci_result, arguments: {{branch: main}}, output: verdict}}
      - tool: {{name: Pay, tool: pay, arguments: {{amount: 5}}, output: receipt}}
"""

FORM = """
version: 1
name: form
state:
  budget: {type: dict}
root:
  ask:
    name: Budget
    question: "How much may it cost?"
    output: budget
    schema:
      type: object
      properties:
        amount: {type: integer, minimum: 1, maximum: 100, default: 10, title: Amount}
        urgent: {type: boolean, default: true}
        colour: {type: string, enum: [red, green, blue, white, black], default: blue}
        note: {type: string, description: "anything <i>else</i>"}
      required: [amount]
"""


class LivePage:
    """The page of a live run of `tree`, the run going on in a thread of its own."""

    def __init__(self, page: Any, tree: Any, server: Any) -> None:
        self.page, self.tree = page, tree
        self.results: list[Any] = []
        open_viewer(page, server)
        self.worker = threading.Thread(
            target=lambda: self.results.append(tree.run(timeout=PATIENCE))
        )
        self.worker.start()

    def said(self, selector: str, start: str) -> str:
        """The text of `selector` once it starts with `start`."""
        self.page.wait_for_function(
            f"(document.querySelector({selector!r}) || {{}}).textContent?.startsWith({start!r})",
            timeout=WAIT_MS,
        )
        return self.page.inner_text(selector)

    def finish(self) -> Any:
        self.worker.join(PATIENCE)
        assert not self.worker.is_alive()
        return self.results[0]


@pytest.fixture
def live(page, tmp_path: Path, request) -> Iterator[LivePage]:
    PAID.clear()
    path = tmp_path / "tree.yaml"
    path.write_text(request.param)
    tree = load_tree(path, tools=[ci_result, pay])
    source = live_source(tree)
    with serving(source) as server:
        shown = LivePage(page, tree, server)
        try:
            yield shown
        finally:
            for question in tree.pending_questions():
                tree.answer(question.id, "decline", reason="the test ended")
            for call in tree.pending_results():
                tree.supply_result(call.call_id, {"passed": False})
            for record in tree.pending_approvals():
                tree.reject(record.call_id, "the test ended")
            shown.worker.join(PATIENCE)
    tree.close()


@pytest.mark.parametrize("live", [CHOOSING], indirect=True)
def test_a_choice_an_external_result_and_a_reply_given_on_the_page(live) -> None:
    page = live.page
    page.wait_for_selector("#questions-list .question", timeout=WAIT_MS)
    assert page.inner_text("#questions-list .asker").startswith("step PickPlan asks [")
    # Shown as text, folded: "show all" says how much is hidden, then shows all of it.
    assert page.inner_text(".question .message .text") == SHOWN[:300] + "\u2026"
    toggle = page.inner_text(".question .message .show-all")
    assert toggle == f"show all ({len(SHOWN) - 300} more characters)"
    page.click(".question .message .show-all")
    assert page.inner_text(".question .message .text") == SHOWN
    assert live.tree.pending_questions()[0].message == ASKED
    assert page.locator("#questions-list b").count() == 0
    radios = page.locator(".question input[type=radio]")
    assert [radios.nth(i).get_attribute("value") for i in range(2)] == ["careful", "fast"]
    page.check(".question input[type=radio][value=fast]")
    page.click(".question .answer")

    page.wait_for_selector("#results-list .waiting-call", timeout=WAIT_MS)
    page.wait_for_selector("#questions", state="hidden", timeout=WAIT_MS)
    what = page.inner_text(".waiting-call .what")
    assert what.startswith('CI: ci_result {"branch":"main"} [call_')
    schema = page.inner_text(".waiting-call .output-schema")
    assert '"required":["passed"]' in schema
    assert page.inner_text(".waiting-call .deadline") == "no deadline"
    page.fill(".waiting-call .result-value", '{"passed": "no"}')
    page.click(".waiting-call .supply")
    refused = live.said(".waiting-call .result-error", "422:")
    assert "result.passed: 'no' is not of type 'boolean'" in refused
    assert page.locator("#results-list .waiting-call").count() == 1  # still waits
    page.fill(".waiting-call .result-value", '{"passed": true}')
    page.click(".waiting-call .supply")

    page.wait_for_selector("#held-list .call", timeout=WAIT_MS)
    page.wait_for_selector("#results", state="hidden", timeout=WAIT_MS)
    page.click("#held-list .respond")
    page.fill("#held-list .reply", REPLY)
    page.click("#held-list .send-reply")
    result = live.finish()
    assert result.run_status == "succeeded", result.reason
    state = live.tree.state
    assert state.get("plan") == "fast" and state.get("verdict") == {"passed": True}
    assert state.get("receipt").endswith(REPLY) and PAID == []
    page.wait_for_selector("#held", state="hidden", timeout=WAIT_MS)


@pytest.mark.parametrize("live", [FORM], indirect=True)
def test_a_forms_fields_have_their_controls_and_defaults_and_a_refusal_is_said(live) -> None:
    page = live.page
    page.wait_for_selector("#questions-list .question", timeout=WAIT_MS)
    amount = ".field[data-field=amount] input[type=number]"
    assert page.inner_text(".field[data-field=amount] .label") == "Amount (amount) *"
    assert page.input_value(amount) == "10"
    assert page.is_checked(".field[data-field=urgent] input[type=checkbox]")
    assert page.input_value(".field[data-field=colour] select") == "blue"
    assert page.inner_text(".field[data-field=note] .help") == "anything <i>else</i>"
    assert page.locator(".question i").count() == 0
    page.fill(amount, "500")
    page.click(".question .answer")
    refused = live.said(".question .answer-error", "422:")
    assert "amount: 500 is greater than the maximum of 100" in refused
    assert len(live.tree.pending_questions()) == 1  # still open, the form as typed
    page.fill(amount, "40")
    page.select_option(".field[data-field=colour] select", "green")
    page.fill(".field[data-field=note] textarea", "by Friday")
    page.click(".question .answer")
    result = live.finish()
    assert result.run_status == "succeeded", result.reason
    assert live.tree.state.get("budget") == {
        "amount": 40,
        "urgent": True,
        "colour": "green",
        "note": "by Friday",
    }
    (question_id,) = asked(live)
    assert live.tree.question(question_id).answer.by == "viewer"


def asked(live: LivePage) -> list[str]:
    """The ids of the questions the page was shown (from its events)."""
    return live.page.evaluate(
        "window.jianmuViewer.events.filter(e => e.type === 'input.requested')"
        ".map(e => e.question_id)"
    )

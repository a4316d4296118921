"""Answering a test run's questions and external calls as the test said, or failing at once.

```python
run = run_tree(tree, answers={"PickPlan": "fast"}, results={"ci_result": {"passed": True}})
```
`answers` maps an `ask` step's name or a question id to its answer (a plain value for a choice,
a number or text; the fields for a form); `results` maps an external tool's name or a call id
to its result. Each is checked against its schema as any desk's would be: a value that does not
fit fails the test with the schema's error. A question or an external call the test gave no
value for stops the run at once with ValueWaitsError naming it, instead of the run waiting out
its timeout.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jianmu_bt.loader.tree import Tree

BY = "test"
"""Who answered, in the journal and the events."""


class ValueWaitsError(AssertionError):
    """A question or an external call waits for a value the test did not give (or gave one
    that does not fit)."""


class OutsideValueDesk:
    """Attends one run's questions and external results and gives the test's values."""

    def __init__(
        self, tree: Tree, answers: Mapping[str, Any] | None, results: Mapping[str, Any] | None
    ) -> None:
        self.tree = tree
        self.answers = dict(answers or {})
        self.results = dict(results or {})

    def watch(self) -> Callable[[], None]:
        """Start attending; returns the function that stops it."""
        stack = ExitStack()
        stack.enter_context(self.tree.attend_questions(self._question))
        stack.enter_context(self.tree.attend_results())
        stack.callback(self.tree.events.subscribe(self._on_event))
        return stack.close

    def _question(self, question: Any) -> None:
        found = [k for k in (question.id, question.server) if k in self.answers]
        if not found:
            self._stop(
                f"the question {question.message!r} (step {question.server!r}, id "
                f"{question.id}) waits for an answer the test did not give: pass "
                f"answers={{{question.server!r}: ...}}"
            )
            return
        try:
            self.tree.answer_question(question.id, self.answers[found[0]], by=BY)
        except (KeyError, ValueError) as exc:
            self._stop(f"the test's answer to {question.server!r} was refused: {exc}")

    def _on_event(self, event: Any) -> None:
        if event.type != "tool.call.waiting" or "schema" not in event.data:
            return  # (a durable run's pause announces the call without waiting in process)
        data = event.data
        found = [k for k in (data.get("call_id"), data.get("tool")) if k in self.results]
        if not found:
            shown = json.dumps(data.get("arguments"), ensure_ascii=False, default=str)
            self._stop(
                f"the external call {data.get('tool')!r} (call id {data.get('call_id')}, "
                f"arguments {shown}) waits for a result the test did not give: pass "
                f"results={{{data.get('tool')!r}: ...}}"
            )
            return
        try:
            self.tree.supply_result(data["call_id"], self.results[found[0]], by=BY)
        except ValueError as exc:
            self._stop(f"the test's result for {data.get('tool')!r} was refused: {exc}")

    def _stop(self, message: str) -> None:
        self.tree.runner.context.stop(ValueWaitsError(message))

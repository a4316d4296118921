"""Deciding the calls a guard holds during a test run, as the test said, or failing at once.

```python
run = run_tree(tree, decisions={"send_email": "approve", "call_7": ("deny", "wrong address")})
```
`decisions` maps a call id or a tool name (a call id wins) to what the reviewer does:

- `"approve"` (or `("approve", note)`): the call runs;
- `"deny"` (or `("deny", reason)`): the call is refused; its step (or agent) reads the reason;
- `"hold"`: the call stays held and the run stops there, as a durable run with `hold="pause"`
  would (work still in flight is cancelled); the run's result is then paused.

A call held with no decision stops the run at once with CallWaitsError naming the call (tool, call
id, arguments), instead of the run waiting out its timeout for a reviewer who never comes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jianmu_bt.guard.decision import Decision

if TYPE_CHECKING:
    from jianmu_bt.loader.tree import Tree

ACTIONS = ("approve", "deny", "hold")
"""What a test may do with a held call."""

DecisionLike = str | tuple[str, str]
"""An action ("approve", "deny", "hold"), or (action, note): the approval note or denial reason."""

BY = "test"
"""Who decided, in the approval records and the journal."""

DEFAULT_DENIAL = "denied by the test"


class CallWaitsError(AssertionError):
    """A call the guard held for approval waits for a decision the test did not give."""

    def __init__(self, tool: str, call_id: str, arguments: Any) -> None:
        self.tool, self.call_id, self.arguments = tool, call_id, arguments
        shown = json.dumps(arguments, ensure_ascii=False, sort_keys=True, default=str)
        super().__init__(
            f"the call to {tool!r} (call id {call_id}, arguments {shown}) waits for a decision "
            f"the test did not give: pass decisions={{{tool!r}: 'approve'}} ('deny' or 'hold'; "
            "or key it by the call id)"
        )


class RunHeld(Exception):
    """Stops a run at a call the test decided to `hold` (caught by `run_tree`)."""


@dataclass(frozen=True)
class TestDecision:
    """One decision of the test: the action and its note (approval note or denial reason)."""

    __test__ = False  # not a pytest test class

    action: str
    note: str | None = None


def parse_decisions(decisions: Mapping[str, DecisionLike] | None) -> dict[str, TestDecision]:
    """Each key's TestDecision; ValueError for an action other than approve, deny or hold."""
    parsed = {}
    for key, value in (decisions or {}).items():
        action, note = (value, None) if isinstance(value, str) else tuple(value)
        if action not in ACTIONS:
            raise ValueError(
                f"decisions[{key!r}] = {value!r}: the action is approve, deny or hold "
                "(optionally as (action, note))"
            )
        parsed[key] = TestDecision(action, note)
    return parsed


class HeldCallDesk:
    """Watches one run of `tree` and decides each call its guards hold, as `decisions` say.

    Subscribed to the tree's events: the guard's `guard.decision` event of a held call comes in
    the run's event loop, where approving, denying and stopping the run are safe.
    """

    def __init__(self, tree: Tree, decisions: Mapping[str, TestDecision]) -> None:
        self.tree = tree
        self.decisions = dict(decisions)
        self.decided: set[str] = set()
        self.stopped_at: dict[str, Any] | None = None
        """The node statuses when the run was stopped at a held call (`hold`)."""

    def watch(self) -> Callable[[], None]:
        """Start deciding; returns the function that stops it."""
        return self.tree.events.subscribe(self._on_event)

    def _on_event(self, event: Any) -> None:
        if event.type == "guard.decision" and event.data.get("decision") == Decision.PENDING:
            self.decide_waiting()

    def decide_waiting(self) -> None:
        """Decide every held call not decided yet; stop the run at the first to hold or with
        no decision."""
        for record in self.tree.pending_approvals():
            if record.kind is not Decision.PENDING or record.call_id in self.decided:
                continue
            self.decided.add(record.call_id)
            decision = self.decisions.get(record.call_id) or self.decisions.get(record.tool)
            if decision is None:
                self._stop(CallWaitsError(record.tool, record.call_id, record.arguments))
                return
            if decision.action == "approve":
                self.tree.approve(record.call_id, decision.note, by=BY)
            elif decision.action == "deny":
                self.tree.reject(record.call_id, decision.note or DEFAULT_DENIAL, by=BY)
            else:
                self.stopped_at = self.tree.runner.node_statuses()
                self._stop(RunHeld(f"held: {record.tool} ({record.call_id})"))
                return

    def _stop(self, error: Exception) -> None:
        self.tree.runner.context.stop(error)

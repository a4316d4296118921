"""The Policy protocol and the small base every built-in policy shares.

A policy looks at one call (and the Tool it would run, when known) and the run's GuardContext,
and answers with a GuardVerdict or None ("no opinion"). Policies never change the context; the
enforcer combines their answers and updates the counters. Policies compare tool names through
`names` (lower-cased, aliases applied).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from jianmu_bt.guard.decision import Decision, GuardVerdict

if TYPE_CHECKING:
    from jianmu_bt.guard.context import GuardContext
    from jianmu_bt.tools import Tool, ToolCall


@runtime_checkable
class Policy(Protocol):
    """What the enforcer needs from a policy: a `name` and a `check` with no side effects."""

    name: str

    def check(self, call: ToolCall, tool: Tool | None, ctx: GuardContext) -> GuardVerdict | None:
        """A verdict about `call`, or None when this policy has no opinion."""
        ...


class BasePolicy:
    """Shared helper for policies: builds verdicts carrying the policy name, call id and tool."""

    name: str = "policy"

    def verdict(
        self,
        decision: Decision,
        call: ToolCall,
        reason: str,
        hint: str | None = None,
    ) -> GuardVerdict:
        """A verdict from this policy about `call`."""
        return GuardVerdict(
            decision=decision,
            reason=reason,
            policy=self.name,
            call_id=call.id,
            tool=call.name,
            hint=hint,
        )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"

"""Served calls under a tree's guard: every call checked *and* counted (budgets, rate limits).

A plain guard callable (`Guard` in `jianmu_bt.mcp.server`) can only refuse. A `ServedCallGuard`
is also told when each allowed call ended, so the calls an MCP client makes use up the same
budgets and rate limits as the calls of a run. `EnforcerGuard` is that for a `GuardEnforcer`
(the `guard:` section of a YAML tree):

- check: the enforcer's combined verdict on the call, against the counters plus every served call
  still running (counted as if it succeeds, so two concurrent calls cannot both take a budget's
  last use);
- record: `GuardEnforcer.record` once the call ended (its effects count when it succeeded, or
  when its outcome is unknown because it was cancelled);
- a call the guard would hold for a reviewer (PENDING) or wants the user to confirm (CONFIRM) is
  refused with a message saying so: an MCP client cannot answer an approval request. Grants
  given on the enforcer's approval store still let matching calls through.

```python
guard = EnforcerGuard(GuardEnforcer.from_config({"budgets": {"http": 10}}))
await serve(toolset, guard=guard)
```
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from jianmu_bt.guard.decision import Decision, GuardVerdict
from jianmu_bt.guard.names import tool_key
from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.calls import ToolCall
from jianmu_bt.tools.effects import counted_effects

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from jianmu_bt.guard.context import GuardContext
    from jianmu_bt.guard.enforcer import GuardEnforcer

#: Why a call that needs a person's decision is refused when served.
APPROVAL_NOTE = (
    "it needs a person's approval, which an MCP client cannot give through this server; run it "
    "in a tree run where a reviewer can approve it, or change the tree's guard"
)


@runtime_checkable
class ServedCallGuard(Protocol):
    """A guard that refuses calls (`check`) and is told when each allowed call ended (`record`).

    `check` returns a reason to refuse, or None to allow (sync or async); `record` is called once
    for every allowed call with `ok` = the result's `ok`, or None when the outcome is unknown
    (the call was cancelled).
    """

    def check(self, call: ToolCall, tool: Tool) -> Awaitable[str | None] | str | None:
        """A reason to refuse `call`, or None to allow it."""
        ...

    def record(self, call: ToolCall, tool: Tool, ok: bool | None) -> None:
        """`call`, which `check` allowed, ended (`ok` None: outcome unknown)."""
        ...


class EnforcerGuard:
    """A `GuardEnforcer` applied to served calls (see the module docstring).

    `exempt` names tools the guard neither checks nor counts (none by default; the run tool of
    `jianmu mcp serve --tree --run-tool` is not exempt: it is checked and counted as a call
    without effects).
    """

    def __init__(self, enforcer: GuardEnforcer, exempt: tuple[str, ...] = ()) -> None:
        self.enforcer = enforcer
        self.exempt = frozenset(name.lower() for name in exempt)
        self._running: dict[int, tuple[str, tuple[str, ...]]] = {}

    @property
    def running(self) -> int:
        """Allowed calls that have not ended yet."""
        return len(self._running)

    def _plan(self) -> GuardContext:
        """The counters as they will be once every running call succeeded."""
        plan = self.enforcer.context.copy()
        for key, tags in self._running.values():
            plan.add_effects(tags)
            plan.add_call_time(key)
        return plan

    def check(self, call: ToolCall, tool: Tool) -> str | None:
        """None (and the call counts as running) when the guard allows it; else the reason."""
        # Without an id: served request ids repeat across clients, and a refused call must not
        # leave an approval request behind that nobody will ever answer.
        if call.name.lower() in self.exempt:
            return None
        probe = ToolCall(name=call.name, arguments=call.arguments, id=None)
        verdicts = self.enforcer.policy_verdicts(probe, tool, self._plan())
        verdict = self.enforcer.decide(probe, tool, [cannot_wait(v) for v in verdicts])
        if verdict.allowed:
            self._running[id(call)] = (tool_key(call, tool), counted_effects(tool))
            return None
        return refusal_reason(verdict)

    def record(self, call: ToolCall, tool: Tool, ok: bool | None) -> None:
        """Count the ended call (effects when it succeeded or its outcome is unknown)."""
        if call.name.lower() in self.exempt:
            return
        self._running.pop(id(call), None)
        self.enforcer.record(call, tool, True if ok is None else ok)


def cannot_wait(verdict: GuardVerdict) -> GuardVerdict:
    """A hold (PENDING) decided as CONFIRM, for a call that cannot wait for a reviewer (a served
    call, a server's sampling request).

    Both need a person: the call is refused with the same note, and a grant still lifts either.
    (The enforcer refuses to hold a call without an id, and the probe of a served call has none.)
    """
    if verdict.decision is Decision.PENDING:
        return replace(verdict, decision=Decision.CONFIRM)
    return verdict


def refusal_reason(verdict: GuardVerdict) -> str:
    """A refused call's reason for an MCP client: the policy, its reason, what to do."""
    reason = f"policy {verdict.policy}: {verdict.reason}".rstrip(".")
    if verdict.decision in (Decision.PENDING, Decision.CONFIRM):
        return f"{reason} ({APPROVAL_NOTE})"
    return f"{reason}. {verdict.hint}" if verdict.hint else reason


__all__ = ["APPROVAL_NOTE", "EnforcerGuard", "ServedCallGuard", "cannot_wait", "refusal_reason"]

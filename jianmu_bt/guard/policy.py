"""The Policy protocol and the small base every built-in policy shares.

A policy looks at one call (and the Tool it would run, when known) and the run's GuardContext,
and answers with a GuardVerdict or None ("no opinion"). Policies never change the context; the
enforcer combines their answers and updates the counters.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from jianmu_bt.guard.context import GuardContext
from jianmu_bt.guard.decision import Decision, GuardVerdict
from jianmu_bt.tools import BuiltinToolProvider, Tool, ToolCall


def canonical_tool_name(name: str) -> str:
    """A tool name compared the way the guard compares names: lower-cased, aliases applied."""
    return BuiltinToolProvider.canonical_name(name)


def call_names(call: ToolCall, tool: Tool | None) -> set[str]:
    """Every canonical name a call answers to: the name called and the resolved tool's name."""
    names = {canonical_tool_name(call.name)}
    if tool is not None:
        names.add(canonical_tool_name(tool.name))
    return names


def tool_key(call: ToolCall, tool: Tool | None) -> str:
    """The one canonical name a call's counters are kept under (the tool's, else the call's)."""
    return canonical_tool_name(tool.name if tool is not None else call.name)


def canonical_names(names: Iterable[str], owner: str) -> frozenset[str]:
    """Validate and canonicalise a list of tool names; `owner` names the policy in errors."""
    if isinstance(names, str):
        raise TypeError(f"{owner} takes a list of tool names, got the string {names!r}")
    result = set()
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{owner}: tool names must be non-empty strings, got {name!r}")
        result.add(canonical_tool_name(name))
    return frozenset(result)


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

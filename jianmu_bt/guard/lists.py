"""Name-list policies: allow, deny, confirm-before-run and approval-required lists.

Names are compared case-insensitively and through the built-in aliases, so `DenyList(["shell"])`
also refuses a call to `bash`, and a call to `file_write` is the same as one to `write_file`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, ClassVar

from jianmu_bt.guard.decision import Decision, GuardVerdict
from jianmu_bt.guard.names import call_names, canonical_names
from jianmu_bt.guard.policy import BasePolicy

if TYPE_CHECKING:
    from jianmu_bt.guard.context import GuardContext
    from jianmu_bt.tools import Tool, ToolCall


class _NameListPolicy(BasePolicy):
    """A policy over a set of canonical tool names: a listed call gets `decision`.

    `reason` and `hint` are templates; `{tool}` is replaced by the name the call used.
    """

    decision: ClassVar[Decision]
    reason: ClassVar[str]
    hint: ClassVar[str | None] = None

    def __init__(self, names: Iterable[str], name: str | None = None) -> None:
        self.names = canonical_names(names, type(self).__name__)
        if name:
            self.name = name

    def matches(self, call: ToolCall, tool: Tool | None) -> bool:
        """True when the call (by its name or its tool's name) is on this list."""
        return not self.names.isdisjoint(call_names(call, tool))

    def check(self, call: ToolCall, tool: Tool | None, ctx: GuardContext) -> GuardVerdict | None:
        """`decision` for a listed tool, else no opinion."""
        if not self.matches(call, tool):
            return None
        hint = self.hint.format(tool=call.name) if self.hint else None
        return self.verdict(self.decision, call, self.reason.format(tool=call.name), hint=hint)


class AllowList(_NameListPolicy):
    """Only the listed tools may run; any other call is DENY. Listed calls get no opinion.

    Use it to pin a run to a known set of tools; other policies still apply to listed ones.
    """

    name = "allow_list"

    def check(self, call: ToolCall, tool: Tool | None, ctx: GuardContext) -> GuardVerdict | None:
        """DENY for a tool that is not listed, else no opinion."""
        if self.matches(call, tool):
            return None
        allowed = ", ".join(sorted(self.names)) or "none"
        return self.verdict(
            Decision.DENY,
            call,
            f"{call.name} is not one of the tools allowed in this run ({allowed})",
            hint=f"Do not call {call.name} again; use one of: {allowed}.",
        )


class DenyList(_NameListPolicy):
    """The listed tools never run (DENY); other calls get no opinion."""

    name = "deny_list"
    decision = Decision.DENY
    reason = "{tool} is not allowed in this run"
    hint = "Do not call {tool} again; use another tool or continue without it."


class ConfirmList(_NameListPolicy):
    """The listed tools need the user's confirmation first (CONFIRM).

    The call is not run; the LLM is told to ask the user. When the user agrees, the application
    approves the refused call (`ApprovalStore.approve`, which lets the identical call through
    once) or grants the tool (`ApprovalStore.grant`), and the LLM makes the call again.
    """

    name = "confirm_list"
    decision = Decision.CONFIRM
    reason = "{tool} is on the list of tools the user confirms first"


class ApprovalRequired(_NameListPolicy):
    """The listed tools wait for a reviewer (PENDING): the batch is held until the call is
    approved (it then runs) or rejected (DENY with the reviewer's reason)."""

    name = "approval_required"
    decision = Decision.PENDING
    reason = "{tool} runs only after a reviewer approves the call"

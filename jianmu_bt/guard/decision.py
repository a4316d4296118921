"""Decision and GuardVerdict: what the guard says about one tool call, and why.

A policy answers a call with a `GuardVerdict` (or None for "no opinion"); the enforcer combines
the verdicts of all policies into one, the most restrictive winning:

| decision  | rank | the executor ...                                               |
|-----------|------|----------------------------------------------------------------|
| `DENY`    | 3    | does not run the call; the LLM reads the refusal               |
| `PENDING` | 2    | holds the whole batch (RUNNING) until a reviewer decides       |
| `CONFIRM` | 1    | does not run the call; the LLM is told to ask the user first   |
| `ALLOW`   | 0    | runs the call                                                  |
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from jianmu_bt.tools.calls import ToolResult


class Decision(StrEnum):
    """The guard's answer to one tool call. Ordered by `rank`: DENY > PENDING > CONFIRM > ALLOW."""

    ALLOW = "allow"
    CONFIRM = "confirm"
    PENDING = "pending"
    DENY = "deny"

    @property
    def rank(self) -> int:
        """How restrictive this decision is (0 = ALLOW ... 3 = DENY)."""
        return _RANK[self]

    @staticmethod
    def strictest(decisions: Iterable[Decision]) -> Decision:
        """The most restrictive of `decisions`; ALLOW when there are none."""
        return max(decisions, key=lambda d: d.rank, default=Decision.ALLOW)


_RANK = {Decision.ALLOW: 0, Decision.CONFIRM: 1, Decision.PENDING: 2, Decision.DENY: 3}


ANSWERED_NOTE = "[Not run: a reviewer answered in its place.]"
"""How the result of a call a reviewer answered in its place starts (the LLM reads it)."""


@dataclass(frozen=True, slots=True)
class GuardVerdict:
    """One decision about one call: what, why (`reason`), who decided (`policy`) and for which call.

    `reason` is a sentence an LLM or a person can read ("bash is not allowed in this run");
    `hint` optionally says what to do next ("try again in 12 s"). `observation()` turns both into
    the tool message the LLM reads in place of the tool's output. `answer` is a reviewer's reply
    given in place of running the call (DENY): the LLM reads it as the call's result.
    """

    decision: Decision
    reason: str
    policy: str
    call_id: str | None
    tool: str = ""
    hint: str | None = None
    answer: str | None = None

    @property
    def allowed(self) -> bool:
        """True when the call may run now."""
        return self.decision is Decision.ALLOW

    def observation(self) -> str:
        """The text the LLM reads for this verdict (starts with "Error:" unless ALLOW).

        It names the tool, the policy and the reason, and says what the LLM can do about it.
        """
        who = f"the call to '{self.tool}'" if self.tool else "the tool call"
        reason = self.reason.rstrip(".")
        if self.decision is Decision.ALLOW:
            return f"{who} is allowed."
        if self.decision is Decision.DENY:
            hint = self.hint or (
                "Do not repeat this call; use another tool or continue without it."
            )
            return f"Error: {who} was refused by policy {self.policy}: {reason}. {hint}"
        if self.decision is Decision.CONFIRM:
            hint = self.hint or (
                "Ask the user to confirm this exact call (same tool, same arguments) and make "
                "the call again only after they agree; do not make it again before that."
            )
            return (
                f"Error: {who} was not run: it needs the user's confirmation before it can run "
                f"(policy {self.policy}: {reason}). {hint}"
            )
        hint = self.hint or "It runs once a reviewer approves it; a rejection is reported back."
        return (
            f"Error: {who} was not run yet: it is waiting for a reviewer's approval "
            f"(policy {self.policy}: {reason}). {hint}"
        )

    def to_result(self) -> ToolResult:
        """The failed ToolResult carrying `observation()`; only for a call that may not run. A
        reviewer's `answer` is a successful result instead: their reply, saying the call did not
        run."""
        if self.allowed:
            raise ValueError(f"{self.tool or 'the call'} is allowed; there is no refusal to report")
        if self.answer is not None:
            return ToolResult(self.tool, True, f"{ANSWERED_NOTE}\n{self.answer}")
        return ToolResult.failure(self.tool, self.observation())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; `from_dict` reads it back."""
        return {
            "decision": self.decision.value,
            "reason": self.reason,
            "policy": self.policy,
            "call_id": self.call_id,
            "tool": self.tool,
            "hint": self.hint,
            "answer": self.answer,
        }

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> GuardVerdict:
        """The verdict `to_dict` produced; a bad decision value raises ValueError naming it."""
        try:
            decision = Decision(data["decision"])
        except (KeyError, ValueError) as exc:
            raise ValueError(
                f"verdict 'decision' must be one of {[d.value for d in Decision]}, "
                f"got {data.get('decision')!r}"
            ) from exc
        return GuardVerdict(
            decision=decision,
            reason=str(data.get("reason", "")),
            policy=str(data.get("policy", "")),
            call_id=data.get("call_id"),
            tool=str(data.get("tool", "")),
            hint=data.get("hint"),
            answer=data.get("answer"),
        )

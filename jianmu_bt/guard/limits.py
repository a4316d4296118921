"""Counting policies: effect budgets across the run and per-tool rate limits.

Both read counters from the GuardContext. Within one batch, `GuardEnforcer.preflight` checks each
call against a copy of the context that already counts the batch's earlier allowed calls, so a
batch of five `http` calls against a budget of three lets three through and refuses two.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from jianmu_bt.guard.context import HISTORY_LIMIT, GuardContext
from jianmu_bt.guard.decision import Decision, GuardVerdict
from jianmu_bt.guard.names import canonical_tool_name, tool_key
from jianmu_bt.guard.policy import BasePolicy
from jianmu_bt.tools.effects import counted_effects

if TYPE_CHECKING:
    from jianmu_bt.tools import Tool, ToolCall

_UNITS = {"": 1.0, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "hour": 3600.0}
_RATE_RE = re.compile(r"^\s*(\d+)\s*/\s*(\d+(?:\.\d+)?)?\s*(s|sec|m|min|h|hour)?\s*$")
#: The text form of a rate ("5/60s", "5/min", "100/1h"), for JSON Schemas.
RATE_PATTERN = _RATE_RE.pattern


def _check_count(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what}: must be a whole number >= 0, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class Rate:
    """At most `count` calls in any window of `per_seconds` seconds."""

    count: int
    per_seconds: float

    def __post_init__(self) -> None:
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise ValueError(f"a rate's count must be a whole number >= 1, got {self.count!r}")
        if self.count > HISTORY_LIMIT:
            raise ValueError(f"a rate's count may be at most {HISTORY_LIMIT}, got {self.count}")
        seconds = self.per_seconds
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
            raise ValueError(f"a rate's window must be a number of seconds, got {seconds!r}")
        if not math.isfinite(seconds) or seconds <= 0:
            raise ValueError(f"a rate's window must be > 0 seconds, got {seconds!r}")

    @staticmethod
    def parse(value: object) -> Rate:
        """A Rate from "5/60s", "5/min", "10/1h", "3/s", a `(count, seconds)` pair or a Rate.

        Raises ValueError naming the accepted forms.
        """
        if isinstance(value, Rate):
            return value
        if isinstance(value, str):
            match = _RATE_RE.match(value)
            if not match:
                raise ValueError(
                    f"{value!r} is not a rate; write '<count>/<window>' such as '5/60s', "
                    "'5/min' or '100/1h'"
                )
            count, amount, unit = match.groups()
            return Rate(int(count), float(amount or 1) * _UNITS[unit or ""])
        if isinstance(value, (tuple, list)) and len(value) == 2:
            return Rate(value[0], value[1])
        raise ValueError(
            f"a rate is a string like '5/60s' or a (count, per_seconds) pair, got {value!r}"
        )

    def __str__(self) -> str:
        return f"{self.count}/{self.per_seconds:g}s"


class EffectBudget(BasePolicy):
    """DENY a call once the run's count for one of its effect tags would exceed the budget.

    `EffectBudget({"http": 10, "file_write": 3})`: the run may make ten calls tagged `http`
    (successful ones count, see `GuardEnforcer.record`). A budget of 0 forbids the effect.
    A tool that declares no effect tags and is not read-only counts as the effect `unknown`
    (`jianmu_bt.tools.effects`): `EffectBudget({"unknown": 0})` admits only tools that declared
    what they do. Calls whose tool is unknown have no tags and get no opinion.
    """

    name = "effect_budget"

    def __init__(self, budgets: Mapping[str, int], name: str | None = None) -> None:
        if not isinstance(budgets, Mapping):
            raise TypeError(f"EffectBudget takes a mapping tag -> max count, got {budgets!r}")
        self.budgets = {
            str(tag).lower(): _check_count(limit, f"EffectBudget[{tag!r}]")
            for tag, limit in budgets.items()
        }
        if name:
            self.name = name

    def check(self, call: ToolCall, tool: Tool | None, ctx: GuardContext) -> GuardVerdict | None:
        """DENY when one more use of any of the tool's budgeted tags would pass its budget."""
        if tool is None:
            return None
        for tag in counted_effects(tool):
            limit = self.budgets.get(tag.lower())
            if limit is None:
                continue
            used = ctx.effect_count(tag)
            if used + 1 > limit:
                return self.verdict(
                    Decision.DENY,
                    call,
                    f"the run's budget of {limit} '{tag}' effects is used up ({used} used)",
                    hint=(
                        f"Do not make more calls with '{tag}' effects in this run; continue "
                        "with what you have."
                    ),
                )
        return None


class RateLimit(BasePolicy):
    """DENY a call when its tool already ran `count` times in the last `per_seconds` seconds.

    `RateLimit({"http_request": (5, 60)})` or `RateLimit({"http_request": "5/60s"})`. Tool names
    are compared through aliases. The refusal tells the LLM how long to wait.
    """

    name = "rate_limit"

    def __init__(self, limits: Mapping[str, object], name: str | None = None) -> None:
        if not isinstance(limits, Mapping):
            raise TypeError(f"RateLimit takes a mapping tool -> rate, got {limits!r}")
        self.limits: dict[str, Rate] = {}
        for tool_name, rate in limits.items():
            try:
                self.limits[canonical_tool_name(tool_name)] = Rate.parse(rate)
            except ValueError as exc:
                raise ValueError(f"RateLimit[{tool_name!r}]: {exc}") from None
        if name:
            self.name = name

    def check(self, call: ToolCall, tool: Tool | None, ctx: GuardContext) -> GuardVerdict | None:
        """DENY while the tool's window is full, saying when the next call may run."""
        key = tool_key(call, tool)
        rate = self.limits.get(key) or self.limits.get(canonical_tool_name(call.name))
        if rate is None:
            return None
        now = ctx.now()
        recent = [t for t in ctx.call_times(key) if t > now - rate.per_seconds]
        if len(recent) < rate.count:
            return None
        # The call may run once enough of the recent runs have left the window.
        wait = max(recent[len(recent) - rate.count] + rate.per_seconds - now, 0.0)
        return self.verdict(
            Decision.DENY,
            call,
            f"{call.name} may run at most {rate.count} times per {rate.per_seconds:g}s "
            f"and that limit is reached",
            hint=f"Wait at least {math.ceil(wait)}s before calling {call.name} again.",
        )

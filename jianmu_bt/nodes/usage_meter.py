"""UsageMeter: what one LLM node has used in a run, and the limits checked before each request.

The node's own `limits` are checked against its own counts, the run's (`services["limits"]`)
against the run's `usage` field. Before a request: `request_options` refuses it when a limit
would be crossed (`UsageLimitExceeded`, see `jianmu_bt.llm.limits`) and caps its `max_tokens`
at the output room the limits leave (output or total tokens, or the cost left at the model's
output price), never above the maximum the node or provider already asks for. After a reply
(new or replayed from the journal): `record`. The counts start again with each run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jianmu_bt.llm import LLMOptions, LLMResponse, Usage
from jianmu_bt.llm.limits import UsageLimits, estimate_tokens

UNKNOWN_MAX_CAP = 4096
"""When neither the node nor its provider names a `max_tokens`, a room below this is sent as
one (every current model allows that much); a larger room is left to the model's own maximum."""

Scope = tuple[UsageLimits, Mapping[str, Any], str]
"""Limits, the counts they are checked against, and whose they are ("run", "agent 'X'")."""


class UsageMeter:
    """One node's usage in the current run and its last request's size (see the module)."""

    __slots__ = ("last_request", "limits", "run_id", "used")

    def __init__(self, limits: UsageLimits | None) -> None:
        self.limits = limits
        self.used: dict[str, int | float] = {}
        self.last_request: tuple[int, int] | None = None  # (messages sent, tokens they took)
        self.run_id: str | None = None

    def start(self, run_id: str) -> None:
        """Begin counting for `run_id` (a new run of the same tree starts from nothing)."""
        if run_id != self.run_id:
            self.run_id = run_id
            self.used = {}
            self.last_request = None

    def scopes(self, name: str, run_limits: Any, run_used: Mapping[str, Any] | None) -> list[Scope]:
        """The limits in force: the node's own, then the run's."""
        found: list[Scope] = []
        if self.limits is not None:
            found.append((self.limits, self.used, f"agent '{name}'"))
        if isinstance(run_limits, UsageLimits):
            found.append((run_limits, run_used or {}, "run"))
        return found

    def request_options(
        self,
        scopes: list[Scope],
        provider: Any,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        options: LLMOptions | None,
    ) -> LLMOptions | None:
        """`options` for a request of `messages`, once every scope allows it."""
        if not scopes:
            return options
        estimate = self.estimate(messages, tools)
        model = options.model if options is not None else None
        cost = getattr(provider, "cost", None)
        input_cost = cost(Usage(input_tokens=estimate), model) if callable(cost) else None
        per_output = None
        if callable(cost) and any(limits.cost is not None for limits, _, _ in scopes):
            million = cost(Usage(output_tokens=1_000_000), model)
            per_output = million / 1_000_000 if million else None
        room: int | None = None
        for limits, used, scope in scopes:
            limits.check_request(used, estimate, input_cost, scope)
            own = limits.output_room(used, estimate, input_cost, per_output)
            if own is not None and (room is None or own < room):
                room = own
        if room is None:
            return options
        known = (options.max_tokens if options is not None else None) or _provider_max(provider)
        if (known is not None and room >= known) or (known is None and room >= UNKNOWN_MAX_CAP):
            return options  # the room is no tighter than what is asked for already
        capped = LLMOptions(max_tokens=room)
        return capped if options is None else options.merged(capped)

    def estimate(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> int:
        """The request's input tokens: the last request's reported tokens plus the new messages'
        estimate, or the whole request's estimate the first time."""
        last = self.last_request
        if last is not None and last[0] <= len(messages) and last[1]:
            return last[1] + estimate_tokens(messages[last[0] :])
        return estimate_tokens(messages, tools)

    def record(self, response: LLMResponse, counts: Mapping[str, int | float], sent: int) -> None:
        """Count a reply (`counts`: `usage_counts(response)`) to a request of `sent` messages."""
        for name, value in counts.items():
            self.used[name] = self.used.get(name, 0) + value
        usage = response.usage
        if sent:
            self.last_request = (sent, usage.input_tokens + usage.output_tokens)


def _provider_max(provider: Any) -> int | None:
    """The `max_tokens` the provider sends when the call names none (None: the model's own)."""
    defaults = getattr(provider, "defaults", None)
    named = getattr(defaults, "max_tokens", None)
    return named or getattr(provider, "default_max_tokens", None)

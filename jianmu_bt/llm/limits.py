"""Usage limits, checked before each request: a request that would cross one is never sent.

```python
limits = UsageLimits(requests=20, input_tokens=200_000, cost=0.50)
```
A run (`limits:` at the top of a tree file) and each agent (`limits:` on the agent) may have
limits; both are checked. Before a request, its input tokens are estimated: the last request's
reported input and output tokens (the conversation is the same one, a turn longer) plus the
new messages' text at about four characters a token, or the whole request's text the first
time (an image counted as `IMAGE_TOKENS`, a file as `FILE_TOKENS`). The check refuses a request
when the requests so far plus one, the input (or total) tokens so far plus the estimate, or the
cost so far plus the estimate's input cost would pass a limit. An output token, total token or
cost limit also caps the request's `max_tokens` at what is left (the cost at the model's output
price), so the reply cannot cross it either. Tool calls are checked when a reply asks for them,
before any runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from jianmu_bt.tools.calls import as_text

CHARS_PER_TOKEN = 4
"""Characters per token in estimates (a usual figure for English text and JSON)."""
MESSAGE_OVERHEAD = 4
"""Tokens a message costs beyond its text (role and separators)."""

COUNTERS = ("requests", "input_tokens", "output_tokens", "total_tokens", "tool_calls", "cost")
"""The usage counters a run's `usage` field and an agent keep, and limits name."""


class UsageLimitExceeded(RuntimeError):
    """A request (or a batch of tool calls) would cross a usage limit; it was not sent (run).

    `limit` is the counter's name, `maximum` its limit, `would_be` the value it would reach and
    `scope` whose limit it is ("run" or an agent's name).
    """

    def __init__(self, limit: str, maximum: float, would_be: float, scope: str) -> None:
        self.limit = limit
        self.maximum = maximum
        self.would_be = would_be
        self.scope = scope
        what = "the tool calls were not run" if limit == "tool_calls" else "no request was sent"
        super().__init__(
            f"usage limit of the {scope}: {limit} would reach {_number(would_be)}, over its "
            f"limit of {_number(maximum)} (limits.{limit}); {what}"
        )

    @classmethod
    def unpriced(cls, maximum: float, scope: str) -> UsageLimitExceeded:
        """A cost limit that cannot be checked: no price is known for the model."""
        error = cls("cost", maximum, math.inf, scope)
        error.args = (
            f"usage limit of the {scope}: limits.cost is set but no price is known for the "
            "model, so no request was sent; install the price table (pip install "
            "'jianmu-bt[prices]') or give `prices: {input, output}` (US dollars per million "
            "tokens) in the llm config",
        )
        return error


class UsageLimits(BaseModel):
    """The most a run or an agent may use; None is no limit. `cost` is in US dollars."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests: int | None = Field(None, ge=0, description="LLM requests.")
    input_tokens: int | None = Field(None, ge=0, description="Input tokens, all requests.")
    output_tokens: int | None = Field(None, ge=0, description="Output tokens, all replies.")
    total_tokens: int | None = Field(None, ge=0, description="Input plus output tokens.")
    tool_calls: int | None = Field(None, ge=0, description="Tool calls asked for by the LLM.")
    cost: float | None = Field(None, ge=0, description="US dollars (needs a price).")

    def check_request(
        self,
        used: Mapping[str, Any],
        input_estimate: int,
        input_cost: float | None,
        scope: str,
    ) -> None:
        """Raise UsageLimitExceeded when a request estimated at `input_estimate` input tokens
        (costing `input_cost`) would cross a limit, given the counters `used` so far."""
        checks = (
            ("requests", _get(used, "requests") + 1),
            ("input_tokens", _get(used, "input_tokens") + input_estimate),
            ("total_tokens", _get(used, "total_tokens") + input_estimate),
            ("output_tokens", _get(used, "output_tokens") + 1),  # room for one token at least
        )
        for name, would_be in checks:
            maximum = getattr(self, name)
            if maximum is not None and would_be > maximum:
                raise UsageLimitExceeded(name, maximum, would_be, scope)
        if self.cost is not None:
            if input_cost is None:
                raise UsageLimitExceeded.unpriced(self.cost, scope)
            would_cost = _get(used, "cost") + input_cost
            if would_cost > self.cost:
                raise UsageLimitExceeded("cost", self.cost, would_cost, scope)

    def output_room(
        self,
        used: Mapping[str, Any],
        input_estimate: int,
        input_cost: float | None = None,
        output_price: float | None = None,
    ) -> int | None:
        """How many output tokens a request may still produce (None: no limit says): what the
        output and total token limits leave, and what the cost limit leaves at `output_price`
        (US dollars per output token) once the request's `input_cost` is paid."""
        rooms: list[float] = []
        if self.output_tokens is not None:
            rooms.append(self.output_tokens - _get(used, "output_tokens"))
        if self.total_tokens is not None:
            rooms.append(self.total_tokens - _get(used, "total_tokens") - input_estimate)
        if self.cost is not None and output_price:
            left = self.cost - _get(used, "cost") - (input_cost or 0)
            rooms.append(left / output_price)
        return max(1, int(min(rooms))) if rooms else None

    def check_tool_calls(self, used: Mapping[str, Any], count: int, scope: str) -> None:
        """Raise UsageLimitExceeded when `count` more tool calls would cross the limit."""
        if self.tool_calls is not None and _get(used, "tool_calls") + count > self.tool_calls:
            raise UsageLimitExceeded(
                "tool_calls", self.tool_calls, _get(used, "tool_calls") + count, scope
            )


def _get(used: Mapping[str, Any], name: str) -> float:
    value = used.get(name) if used else None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def _number(value: float) -> str:
    return f"{value:,.4f}".rstrip("0").rstrip(".") if isinstance(value, float) else f"{value:,}"


def estimate_tokens(
    messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] | None = None
) -> int:
    """An estimate of the input tokens of a request with `messages` and `tools`."""
    chars = sum(_message_chars(message) for message in messages)
    chars += sum(len(as_text(schema)) for schema in tools or ())
    return math.ceil(chars / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD * len(messages)


IMAGE_TOKENS = 1600
"""Tokens an image part is estimated at (a large image at the providers' usual scaling)."""
FILE_TOKENS = 3000
"""Tokens a file part (a PDF, say) is estimated at: its size in base64 says little of its text."""


def _message_chars(message: Mapping[str, Any]) -> int:
    content = message.get("content")
    if isinstance(content, str):
        chars = len(content)
    elif isinstance(content, list):  # content parts: images and files at a flat estimate
        chars = 0
        for part in content:
            kind = part.get("type") if isinstance(part, Mapping) else None
            if kind == "image_url":
                chars += IMAGE_TOKENS * CHARS_PER_TOKEN
            elif kind == "file":
                chars += FILE_TOKENS * CHARS_PER_TOKEN
            else:
                chars += len(as_text(part.get("text", part) if isinstance(part, Mapping) else part))
    else:
        chars = len(as_text(content or ""))
    for call in message.get("tool_calls") or ():
        chars += len(as_text(call))
    return chars

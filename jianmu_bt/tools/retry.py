"""When to try a failed operation again: how many attempts, how far apart, how long in all.

One `RetryPolicy` serves every retried operation of the project: tool calls made by tree nodes
(`ToolNode`, `ToolExecutor`) and LLM requests (`jianmu_bt.llm`). Which failures are worth a retry
is the caller's judgement (a tool call with invalid arguments, an HTTP 401, ...); the policy says
only how many attempts, how long to wait before each retry, and when to stop.

Waits grow exponentially (`initial_delay * multiplier**(n-1)` before the n-th retry) or linearly
(`initial_delay * n`), are capped at `max_delay`, and are moved by a random ±`jitter` fraction so
that many clients do not retry in step. A failure may ask for its own wait (an HTTP server's
Retry-After): that wait replaces the computed one, unless it exceeds `max_retry_after`. No wait
runs past `deadline`, counted from the first attempt.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# The caps of the tool nodes' `max_retries` / `retry_backoff` keys (see `from_retries`).
TOOL_RETRY_MAX_DELAY = 30.0


@dataclass(frozen=True, slots=True)
class RetryDecision:
    """What to do after a failed attempt: wait `delay` seconds and retry, or stop (`delay` None).

    `reason` says why not, when the answer is to stop (for the final error or log line).
    """

    delay: float | None
    reason: str = ""

    @property
    def retry(self) -> bool:
        """True when the operation should be tried again after `delay` seconds."""
        return self.delay is not None


class RetryPolicy(BaseModel):
    """How often and how long to retry one operation (see the module docstring).

    - `max_attempts`: attempts in all, the first included (1 means no retry).
    - `initial_delay`: seconds before the first retry.
    - `backoff`: "exponential" (each wait `multiplier` times the last) or "linear" (the n-th wait
      is `n * initial_delay`).
    - `max_delay`: the longest computed wait; `jitter`: the random fraction a wait is moved by.
    - `deadline`: seconds for the whole operation (all attempts and waits), or None for no limit.
    - `max_retry_after`: the longest wait a failure may ask for; a longer ask ends the retries.
    - `retry_timeouts`: retry attempts that timed out too (each has already waited its timeout).

    Immutable and validated: a negative delay or a zero `max_attempts` is an error when the policy
    is made. The defaults suit a remote service (three attempts, ±25 % jitter, 300 s in all).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_attempts: int = Field(default=3, ge=1)
    initial_delay: float = Field(default=0.5, ge=0)
    backoff: Literal["exponential", "linear"] = "exponential"
    multiplier: float = Field(default=2.0, ge=1)
    max_delay: float = Field(default=20.0, ge=0)
    jitter: float = Field(default=0.25, ge=0, le=1)
    deadline: float | None = Field(default=300.0, gt=0)
    max_retry_after: float = Field(default=60.0, ge=0)
    retry_timeouts: bool = False

    @classmethod
    def from_retries(cls, max_retries: int = 0, retry_backoff: float = 0.5) -> RetryPolicy:
        """The policy of a tool node's `max_retries` and `retry_backoff` settings.

        `max_retries` retries after the first attempt, waiting `retry_backoff * 2**(n-1)` seconds
        (at most 30) before the n-th, without jitter or deadline; timed-out calls are retried.
        """
        return cls(
            max_attempts=max_retries + 1,
            initial_delay=retry_backoff,
            max_delay=TOOL_RETRY_MAX_DELAY,
            jitter=0.0,
            deadline=None,
            retry_timeouts=True,
        )

    @property
    def max_retries(self) -> int:
        """Retries after the first attempt (`max_attempts - 1`)."""
        return self.max_attempts - 1

    def delay(self, retry_number: int) -> float:
        """The wait before retry `retry_number` (1 for the first retry), jitter included."""
        if self.backoff == "linear":
            base = self.initial_delay * retry_number
        else:
            base = self.initial_delay * self.multiplier ** (retry_number - 1)
        base = min(self.max_delay, base)
        if self.jitter:
            base *= 1 + random.uniform(-self.jitter, self.jitter)
        return max(0.0, base)

    def time_left(self, elapsed: float) -> float | None:
        """Seconds left before the deadline, `elapsed` seconds after the first attempt began."""
        return None if self.deadline is None else self.deadline - elapsed

    def decide(self, attempts: int, elapsed: float, asked: float | None = None) -> RetryDecision:
        """Whether to retry after `attempts` failed attempts, `elapsed` seconds since the first.

        `asked` is the wait the failure itself asked for (a server's Retry-After), if any.
        """
        if attempts >= self.max_attempts:
            return RetryDecision(None, f"gave up after {attempts} attempts")
        if asked is None:
            delay = self.delay(attempts)
        elif asked > self.max_retry_after:
            return RetryDecision(
                None,
                f"not retried: the server asked to wait {asked:g} s, more than "
                f"max_retry_after={self.max_retry_after:g} s",
            )
        else:
            delay = asked
        left = self.time_left(elapsed)
        if left is not None and delay >= left:
            return RetryDecision(
                None,
                f"not retried: waiting {delay:.2f} s would pass the {self.deadline:g} s "
                "retry deadline",
            )
        return RetryDecision(delay)


# A policy that never retries: the default of a single tool call.
NO_RETRY = RetryPolicy.from_retries(0)

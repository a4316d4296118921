"""Retrying LLM requests: exponential backoff with jitter, Retry-After, bounded attempts and time.

A request is retried only when its error says it may be (`LLMError.retryable`: HTTP 408, 409,
429, 5xx, 529, and connection failures); a 400/401/404 or a malformed reply fails at once. A
server's Retry-After (seconds, HTTP date, or OpenAI's `retry-after-ms`) replaces the computed
backoff. No wait ever runs past the total deadline: when the next wait would, the last error is
raised at once, saying so.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TypeVar

import anyio
from pydantic import BaseModel, ConfigDict, Field

from jianmu_bt.llm.errors import LLMError, LLMTimeoutError

logger = logging.getLogger("jianmu_bt.llm")

T = TypeVar("T")

DEFAULT_RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


class RetryPolicy(BaseModel):
    """How often and how long to retry one LLM request.

    The n-th retry waits `initial_delay * multiplier**(n-1)`, capped at `max_delay`, moved by a
    random ±`jitter` fraction so that many clients do not retry in step; a server's Retry-After
    replaces that wait. `deadline` bounds the whole call (all attempts and waits, in seconds);
    `max_retry_after` is the longest Retry-After worth waiting for. Timeouts are retried only
    with `retry_timeouts` (each attempt has already waited a full timeout).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_attempts: int = Field(default=3, ge=1)
    initial_delay: float = Field(default=0.5, ge=0)
    max_delay: float = Field(default=20.0, ge=0)
    multiplier: float = Field(default=2.0, ge=1)
    jitter: float = Field(default=0.25, ge=0, le=1)
    deadline: float | None = Field(default=300.0, gt=0)
    max_retry_after: float = Field(default=60.0, ge=0)
    retry_statuses: frozenset[int] = DEFAULT_RETRY_STATUSES
    retry_timeouts: bool = False

    def backoff(self, retry_number: int) -> float:
        """The wait before retry `retry_number` (1 for the first retry), jitter included."""
        base = min(self.max_delay, self.initial_delay * self.multiplier ** (retry_number - 1))
        if self.jitter:
            base *= 1 + random.uniform(-self.jitter, self.jitter)
        return max(0.0, base)


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds a server asked us to wait, from `retry-after-ms` or `Retry-After`, else None.

    `Retry-After` may be a number of seconds or an HTTP date; a date in the past gives 0.
    Unreadable values are ignored (None), never an error.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _annotate(error: LLMError, note: str) -> LLMError:
    error.message = f"{error.message} ({note})"
    error.args = (error.message,)
    return error


async def call_with_retries(
    attempt: Callable[[float | None], Awaitable[T]], policy: RetryPolicy, *, what: str
) -> T:
    """Run `attempt(remaining_seconds)` until it succeeds or retrying is pointless.

    `remaining_seconds` is the time left before the deadline (None without one); an attempt
    should bound itself by it. Raises the last LLMError, annotated with why it was not retried.
    """
    started = time.monotonic()
    for number in range(1, policy.max_attempts + 1):
        remaining = None
        if policy.deadline is not None:
            remaining = policy.deadline - (time.monotonic() - started)
            if remaining <= 0:
                raise LLMTimeoutError(f"{what}: the {policy.deadline:g} s retry deadline passed")
        try:
            return await attempt(remaining)
        except LLMError as error:
            if not error.retryable:
                raise
            if number == policy.max_attempts:
                raise _annotate(error, f"gave up after {number} attempts") from None
            if error.retry_after is not None:
                if error.retry_after > policy.max_retry_after:
                    raise _annotate(
                        error,
                        f"not retried: the server asked to wait {error.retry_after:g} s, more "
                        f"than max_retry_after={policy.max_retry_after:g} s",
                    ) from None
                delay = error.retry_after
            else:
                delay = policy.backoff(number)
            if policy.deadline is not None:
                left = policy.deadline - (time.monotonic() - started)
                if delay >= left:
                    raise _annotate(
                        error,
                        f"not retried: waiting {delay:.2f} s would pass the "
                        f"{policy.deadline:g} s retry deadline",
                    ) from None
            logger.warning(
                "%s: %s; retry %d of %d in %.2f s",
                what,
                error.message,
                number,
                policy.max_attempts - 1,
                delay,
            )
            await anyio.sleep(delay)
    raise AssertionError("unreachable")  # the loop always returns or raises

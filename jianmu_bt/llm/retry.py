"""Retrying LLM requests under a `RetryPolicy`: only retryable errors, within the deadline.

A request is retried only when its error says it may be (`LLMError.retryable`: HTTP 408, 409,
429, 5xx, 529, and connection failures); a 400/401/404 or a malformed reply fails at once. A
server's Retry-After (`LLMError.retry_after`) replaces the computed backoff. No wait ever runs
past the policy's deadline: when the next wait would, the last error is raised at once, saying so.
The policy itself is the project's one `RetryPolicy` (`jianmu_bt.tools.retry`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from jianmu_bt.llm.errors import LLMError, LLMTimeoutError
from jianmu_bt.tools.retry import RetryPolicy

logger = logging.getLogger(__name__)

T = TypeVar("T")


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
    number = 1
    while True:
        remaining = policy.time_left(time.monotonic() - started)
        if remaining is not None and remaining <= 0:
            raise LLMTimeoutError(f"{what}: the {policy.deadline:g} s retry deadline passed")
        try:
            return await attempt(remaining)
        except LLMError as error:
            if not error.retryable:
                raise
            decision = policy.decide(number, time.monotonic() - started, error.retry_after)
            if decision.delay is None:
                raise _annotate(error, decision.reason) from None
            logger.warning(
                "%s: %s; retry %d of %d in %.2f s",
                what,
                error.message,
                number,
                policy.max_retries,
                decision.delay,
            )
            await anyio.sleep(decision.delay)
        number += 1

"""Turning an HTTP error reply into the LLMError a caller can act on.

Each message names the request (`POST <url>`), the model, the status, the server's own words
(pulled out of the vendors' error shapes) and what to check. The caller passes a `redact`
function: the server's text goes through it before it reaches a message or `body`. Which
statuses are worth a retry, and how long the server asked us to wait (Retry-After), are HTTP
matters decided here; the retry loop (`jianmu_bt.llm.retry`) only reads the error's verdict.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from http import HTTPStatus
from typing import Any

from jianmu_bt.llm.errors import (
    ErrorDetails,
    LLMAuthenticationError,
    LLMBadRequestError,
    LLMError,
    LLMNotFoundError,
    LLMRateLimitError,
    LLMServerError,
)

BODY_LIMIT = 2000
MESSAGE_LIMIT = 300
# Statuses worth another attempt: timeouts, conflicts, rate limits, overloaded servers.
DEFAULT_RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


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


@dataclass(frozen=True, slots=True)
class ErrorContext:
    """Who made the failing request, for the error message.

    `key_hint` says where the API key came from (or how to give one); `not_found_hint` says
    what to check about the base URL when a 404 comes back.
    """

    provider: str
    url: str
    model: str | None
    key_hint: str
    not_found_hint: str
    redact: Callable[[str], str]


def server_message(text: str) -> str:
    """The human-readable part of an error reply, whatever vendor shape it has.

    Understands `{"error": {"message": ...}}` (OpenAI, Anthropic, vLLM), `{"error": "..."}`
    (Ollama, llama.cpp), `{"detail": ...}` and `{"message": ...}`; otherwise the text itself.
    """
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = None
    found: Any = None
    if isinstance(data, Mapping):
        error = data.get("error")
        if isinstance(error, Mapping):
            found = error.get("message") or error.get("type")
        elif error:
            found = error
        found = found or data.get("detail") or data.get("message")
    if found is None:
        found = text
    found = found if isinstance(found, str) else json.dumps(found, ensure_ascii=False)
    found = " ".join(found.split())
    return found[:MESSAGE_LIMIT] + ("..." if len(found) > MESSAGE_LIMIT else "")


def error_from_status(
    status: int,
    headers: Mapping[str, str],
    text: str,
    context: ErrorContext,
    retry_statuses: frozenset[int],
) -> LLMError:
    """The LLMError for an HTTP error reply (`status` >= 400)."""
    text = context.redact(text)
    said = server_message(text) or "(empty reply)"
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "error"
    where = f"POST {context.url} returned {status} {reason}"
    model = f" for model {context.model!r}" if context.model else ""
    retry_after = parse_retry_after(headers)
    fields: ErrorDetails = {
        "provider": context.provider,
        "url": context.url,
        "model": context.model,
        "status_code": status,
        "body": text[:BODY_LIMIT],
        "retry_after": retry_after,
        "retryable": status in retry_statuses,
    }
    if status in (401, 403):
        verb = "rejected the API key" if status == 401 else "refused access"
        return LLMAuthenticationError(
            f"{context.provider}: {verb}: {where}{model}: {said}. {context.key_hint}", **fields
        )
    if status == 404:
        return LLMNotFoundError(
            f"{context.provider}: {where}{model}: {said}. Either the model name is unknown to "
            f"this server or the base URL is wrong{context.not_found_hint}",
            **fields,
        )
    if status == 429:
        hint = ""
        if retry_after is not None:
            hint = f" (the server asked to retry after {retry_after:g} s)"
        return LLMRateLimitError(
            f"{context.provider}: rate limited: {where}{model}: {said}{hint}", **fields
        )
    if status >= 500 or status in retry_statuses:
        return LLMServerError(f"{context.provider}: server error: {where}{model}: {said}", **fields)
    return LLMBadRequestError(
        f"{context.provider}: the request was rejected: {where}{model}: {said}", **fields
    )

"""The errors an LLM call can raise, one class per cause a caller may handle differently.

Every error names the provider and, where one was involved, the URL, the model and the HTTP status,
and quotes the server's own message. None of them ever contains an API key: messages built from a
server's reply are redacted before they reach an exception (servers do echo keys back in 401s).
"""

from __future__ import annotations

from typing import TypedDict, Unpack


class ErrorDetails(TypedDict, total=False):
    """What an LLMError may tell besides its message (each an attribute of the error)."""

    provider: str | None
    url: str | None
    model: str | None
    status_code: int | None
    body: str | None
    retry_after: float | None
    retryable: bool


class LLMError(Exception):
    """Base class of every LLM provider error.

    Attributes: `provider` ("openai", "anthropic", "scripted"), `url`, `model`, `status_code`
    (None when no HTTP reply was received), `body` (the server's reply, redacted and shortened) and
    `retry_after` (seconds the server asked us to wait, when it said); `retryable` tells the
    retry loop whether trying again may help. Each is given as a keyword (`ErrorDetails`).
    """

    # Defaults of the details a raise site leaves out.
    provider: str | None = None
    url: str | None = None
    model: str | None = None
    status_code: int | None = None
    body: str | None = None
    retry_after: float | None = None
    retryable: bool = False

    def __init__(self, message: str, **details: Unpack[ErrorDetails]) -> None:
        super().__init__(message)
        self.message = message
        for name, value in details.items():
            setattr(self, name, value)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, status_code={self.status_code!r})"


class LLMConfigurationError(LLMError, ValueError):
    """The provider cannot make a request as configured (no model, no key where one is needed)."""


class InvalidRequestError(LLMError, ValueError):
    """The messages, tools or options given to a provider are malformed; says which and where."""


class LLMBadRequestError(LLMError):
    """The server rejected the request as invalid (HTTP 400/413/422), e.g. a too long context."""


class LLMAuthenticationError(LLMError):
    """HTTP 401/403: the API key is missing, wrong or not allowed to use this model."""


class LLMNotFoundError(LLMError):
    """HTTP 404: an unknown model or a wrong base URL (the message says which URL and model)."""


class LLMRateLimitError(LLMError):
    """HTTP 429 after the retries were used up; `retry_after` holds the server's last hint."""


class LLMServerError(LLMError):
    """HTTP 5xx (or a server error event inside a stream) after the retries were used up."""


class LLMConnectionError(LLMError, ConnectionError):
    """The server could not be reached or dropped the connection, after the retries were used up."""


class LLMTimeoutError(LLMError, TimeoutError):
    """No complete reply within the per-request timeout or the total retry deadline."""


class LLMResponseError(LLMError):
    """The server answered 2xx but the reply is malformed; the message says what was missing."""


class ScriptExhaustedError(LLMError):
    """A ScriptedProvider was called more times than it has replies."""

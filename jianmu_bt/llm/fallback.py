"""FallbackProvider: models in order; a turn that fails on one goes to the next.

```python
llm = FallbackProvider([claude, gpt, local], fallback_on=("connection", "rate_limit", "server"))
```
Each request is sent to the first provider; when it fails with an error the list names, the very
same request (the same messages: nothing is added to the conversation) goes to the next one, and
so on. An error it does not name (a bad request, a wrong key) is raised at once. The reply says
which provider answered (`LLMResponse.provider`, kept in the journal and the `llm.response`
event). Each provider keeps its own model and options; round-trip parts one provider gave are
dropped by another (`jianmu_bt.llm.round_trip`). A stream falls back only until its first event:
after that the caller has seen part of a reply, and an error is raised (with `refusal` named, a
reply's events are held until it is complete, so a refusal can still move on).

| word         | errors                                                  |
|--------------|---------------------------------------------------------|
| `connection` | `LLMConnectionError`: the server could not be reached   |
| `timeout`    | `LLMTimeoutError`                                       |
| `rate_limit` | `LLMRateLimitError`: 429 after the provider's retries   |
| `server`     | `LLMServerError`: 5xx, 529, an error event in a stream  |
| `response`   | `LLMResponseError`: a malformed reply                   |
| `refusal`    | not an error: a reply that refused (`LLMResponse.refused`) |
| `bad_request`, `not_found`, `auth` | 400/413/422, 404, 401/403         |
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from types import TracebackType
from typing import Any, Literal, Self, cast, get_args

from jianmu_bt.llm.base import LLMOptions, LLMProvider, LLMResponse, StreamEvent, ToolsInput
from jianmu_bt.llm.errors import (
    LLMAuthenticationError,
    LLMBadRequestError,
    LLMConfigurationError,
    LLMConnectionError,
    LLMError,
    LLMNotFoundError,
    LLMRateLimitError,
    LLMResponseError,
    LLMServerError,
    LLMTimeoutError,
)

FallbackOn = Literal[
    "connection", "timeout", "rate_limit", "server", "response", "refusal", "bad_request",
    "not_found", "auth",
]  # fmt: skip
FALLBACK_WORDS: tuple[str, ...] = get_args(FallbackOn)
_Stream = AsyncGenerator[StreamEvent, None]  # what a provider's `stream` returns (closable)
DEFAULT_FALLBACK_ON: tuple[FallbackOn, ...] = ("connection", "timeout", "rate_limit", "server")

_ERRORS: dict[str, type[LLMError]] = {
    "connection": LLMConnectionError,
    "timeout": LLMTimeoutError,
    "rate_limit": LLMRateLimitError,
    "server": LLMServerError,
    "response": LLMResponseError,
    "bad_request": LLMBadRequestError,
    "not_found": LLMNotFoundError,
    "auth": LLMAuthenticationError,
}


class FallbackExhaustedError(LLMError):
    """Every provider of a FallbackProvider failed; `errors` holds each one's error in order."""

    def __init__(self, errors: Sequence[tuple[str, BaseException | str]]) -> None:
        self.errors = list(errors)
        said = "; ".join(f"{name}: {error}" for name, error in self.errors)
        super().__init__(f"every fallback model failed: {said}", provider="fallback")


def provider_name(provider: Any) -> str:
    """How a provider is named in errors and in `LLMResponse.provider`: `origin/model`."""
    where = getattr(provider, "origin", None) or type(provider).__name__
    model = getattr(provider, "model", None)
    return f"{where}/{model}" if model else str(where)


class FallbackProvider:
    """An `LLMProvider` over several, tried in order (see the module docstring)."""

    def __init__(
        self,
        providers: Sequence[LLMProvider],
        *,
        fallback_on: Sequence[str] = DEFAULT_FALLBACK_ON,
    ) -> None:
        if len(providers) < 1:
            raise LLMConfigurationError("a FallbackProvider needs at least one provider")
        unknown = sorted(set(fallback_on) - set(FALLBACK_WORDS))
        if unknown:
            raise LLMConfigurationError(
                f"fallback_on: unknown word(s) {', '.join(map(repr, unknown))} "
                f"(known: {', '.join(FALLBACK_WORDS)})"
            )
        self.providers = list(providers)
        self.fallback_on = frozenset(fallback_on)
        self._errors = tuple(_ERRORS[w] for w in self.fallback_on if w in _ERRORS)

    @property
    def model(self) -> str | None:
        """The first provider's model."""
        return getattr(self.providers[0], "model", None)

    def __repr__(self) -> str:
        names = ", ".join(provider_name(p) for p in self.providers)
        return f"FallbackProvider([{names}], fallback_on={sorted(self.fallback_on)})"

    @property
    def native_output(self) -> bool:
        """True when every provider enforces an output schema itself."""
        return all(getattr(p, "native_output", False) for p in self.providers)

    def replayed(self, response: LLMResponse) -> None:
        """A durable run's replay took a turn from its journal: tell the provider that gave it
        (a scripted one then skips that reply)."""
        for provider in self.providers:
            hook = getattr(provider, "replayed", None)
            if provider_name(provider) == response.provider and callable(hook):
                hook(response)
                return

    def _falls_back(self, error: BaseException) -> bool:
        return isinstance(error, self._errors)

    def cost(self, usage: Any, model: str | None = None) -> float | None:
        """The first provider's price of `usage` (a reply carries its own provider's cost)."""
        cost = getattr(self.providers[0], "cost", None)
        return cost(usage, model) if callable(cost) else None

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: ToolsInput = None,
        options: LLMOptions | None = None,
    ) -> LLMResponse:
        """The first reply, in provider order, that is not a failure the list names."""
        failures: list[tuple[str, BaseException | str]] = []
        for provider in self.providers:
            name = provider_name(provider)
            try:
                response = await provider.complete(messages, tools, options)
            except LLMError as exc:
                if not self._falls_back(exc):
                    raise
                failures.append((name, exc))
                continue
            if response.refused and "refusal" in self.fallback_on:
                failures.append((name, f"refused: {response.refusal or response.text}"))
                continue
            return response.model_copy(update={"provider": name})
        raise FallbackExhaustedError(failures)

    async def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: ToolsInput = None,
        options: LLMOptions | None = None,
    ) -> AsyncGenerator[StreamEvent, None]:
        """The first provider's stream that gets as far as one event (see the module). With
        `refusal` in `fallback_on` a reply's events are held until it is complete, so a refusal
        can still go to the next model."""
        from jianmu_bt.llm.base import StreamCompleted

        hold = "refusal" in self.fallback_on
        failures: list[tuple[str, BaseException | str]] = []
        for provider in self.providers:
            name = provider_name(provider)
            started = False
            held: list[StreamEvent] = []
            try:
                async with aclosing(
                    cast(_Stream, provider.stream(messages, tools, options))
                ) as events:
                    async for event in events:
                        if not isinstance(event, StreamCompleted):
                            if hold:
                                held.append(event)
                            else:
                                started = True
                                yield event
                            continue
                        response = event.response
                        if hold and response.refused:
                            failures.append((name, f"refused: {response.refusal}"))
                            break
                        started = True
                        for earlier in held:
                            yield earlier
                        yield StreamCompleted(response.model_copy(update={"provider": name}))
                        return
            except LLMError as exc:
                if started or not self._falls_back(exc):
                    raise
                failures.append((name, exc))
        raise FallbackExhaustedError(failures)

    async def open(self) -> None:
        """Open every provider (pooled connections for the HTTP ones)."""
        for provider in self.providers:
            opener = getattr(provider, "open", None)
            if callable(opener):
                await opener()

    async def aclose(self) -> None:
        """Close every provider, the last opened first."""
        for provider in reversed(self.providers):
            closer = getattr(provider, "aclose", None)
            if callable(closer):
                await closer()

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

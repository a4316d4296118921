"""The skeleton every provider of this package shares: check the call, then answer it.

`complete` and `stream` first turn their arguments into a `PreparedRequest` (so bad input is
reported the same way by every provider, before any network traffic), then hand it to the
provider's `_answer` or `_answer_stream`. `async with provider:` opens and closes what the
provider holds (pooled connections for the HTTP providers, nothing for the scripted one).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from types import TracebackType
from typing import Any, Self

from jianmu_bt.llm.base import (
    LLMOptions,
    LLMResponse,
    StreamCompleted,
    StreamEvent,
    ToolsInput,
    Usage,
)
from jianmu_bt.llm.costs import Prices, cost_of
from jianmu_bt.llm.history import ConversationCache
from jianmu_bt.llm.request import PreparedRequest, prepare_request


class ProviderBase(ABC):
    """An `LLMProvider` whose calls go through `prepare_request` (see the module docstring).

    Subclasses set `_defaults` (their options, the model included) and implement `_answer` and
    `_answer_stream`; `_missing_model_hint` says how to name a model when none is given. Each
    reply carries its `cost` when the price of its model is known (`prices`, else the price
    table, see `jianmu_bt.llm.costs`).
    """

    _defaults: LLMOptions
    _conversation_cache: ConversationCache | None = None
    prices: Prices | None = None
    """Prices that win over the price table (US dollars per million tokens)."""
    price_provider: str | None = None
    """The provider name the price table knows this provider's models under."""
    price_url: str | None = None
    """The API URL the price table may recognise the provider by."""

    @property
    def defaults(self) -> LLMOptions:
        """The options every call starts from (the model, `max_tokens`, ...)."""
        return self._defaults

    def cost(self, usage: Usage, model: str | None = None) -> float | None:
        """What `usage` costs on `model` (default: this provider's); None when no price is known."""
        return cost_of(
            usage,
            model or self._defaults.model,
            provider=self.price_provider,
            api_url=self.price_url,
            prices=self.prices,
        )

    def _priced(self, response: LLMResponse) -> LLMResponse:
        if response.cost is not None or not response.usage.total_tokens:
            return response
        cost = self.cost(response.usage, response.model)
        return response if cost is None else response.model_copy(update={"cost": cost})

    @property
    def _conversations(self) -> ConversationCache:
        # Made on first use, so subclasses need not call an __init__ of ours.
        cache = self._conversation_cache
        if cache is None:
            cache = self._conversation_cache = ConversationCache()
        return cache

    def _missing_model_hint(self) -> str:
        return "pass model="

    def _prepare(
        self, messages: Sequence[Mapping[str, Any]], tools: ToolsInput, options: LLMOptions | None
    ) -> PreparedRequest:
        """The checked request; subclasses extend it with checks of their own."""
        return prepare_request(
            messages,
            tools,
            options,
            self._defaults,
            missing_model_hint=self._missing_model_hint(),
            conversations=self._conversations,
        )

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: ToolsInput = None,
        options: LLMOptions | None = None,
    ) -> LLMResponse:
        """One request, the whole assistant reply (see `LLMProvider.complete`)."""
        return self._priced(await self._answer(self._prepare(messages, tools, options)))

    async def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: ToolsInput = None,
        options: LLMOptions | None = None,
    ) -> AsyncGenerator[StreamEvent, None]:
        """One request, the reply as events ending with `StreamCompleted`.

        Close it early with `contextlib.aclosing` when not reading it to the end.
        """
        request = self._prepare(messages, tools, options)
        async with aclosing(self._answer_stream(request)) as events:
            async for event in events:
                if isinstance(event, StreamCompleted):
                    event = StreamCompleted(self._priced(event.response))
                yield event

    @abstractmethod
    async def _answer(self, request: PreparedRequest) -> LLMResponse:
        """The whole reply to a checked request."""

    @abstractmethod
    def _answer_stream(self, request: PreparedRequest) -> AsyncGenerator[StreamEvent, None]:
        """The reply to a checked request as events, the last a `StreamCompleted`."""

    async def open(self) -> None:  # noqa: B027 - a no-op hook by design, not a forgotten abstract
        """Acquire what calls may share until `aclose()` (`async with` does both)."""

    async def aclose(self) -> None:  # noqa: B027 - a no-op hook by design, not a forgotten abstract
        """Release what `open()` acquired; every provider can be closed the same way."""

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

"""What the HTTP providers share: where the URL, key and model come from, and the call skeleton.

Key safety: a vendor's own key variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`) is sent only to
that vendor's host (its default URL, its own `*_BASE_URL` variable, or a base URL on its host).
Pointing the provider at another server never sends it a key it was not given for that server:
pass `api_key=`, `api_key_env=`, or (OpenAI-compatible) set `JIANMU_LLM_API_KEY`.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlparse

import httpx
from pydantic import SecretStr

from jianmu_bt.llm.base import LLMOptions, LLMResponse, StreamEvent, ToolsInput
from jianmu_bt.llm.errors import LLMConfigurationError, LLMError, LLMServerError
from jianmu_bt.llm.request import PreparedRequest, prepare_request
from jianmu_bt.llm.retry import RetryPolicy
from jianmu_bt.llm.transport import HTTPEndpoint, check_base_url

if TYPE_CHECKING:
    from httpx_sse import ServerSentEvent

DEFAULT_TIMEOUT = 120.0  # seconds per request; local models on a CPU can take this long


@dataclass(frozen=True, slots=True)
class VendorSettings:
    """Where one vendor's settings come from.

    `base_url_envs` are read in order; `vendor_key_env` is sent only to the vendor's own host;
    `generic_key_env` (if any) is sent to whatever base URL is configured.
    """

    name: str
    default_base_url: str
    base_url_envs: tuple[str, ...]
    vendor_base_url_env: str
    vendor_key_env: str
    generic_key_env: str | None
    model_envs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ResolvedSettings:
    """A provider's base URL, key and model after arguments and environment were consulted."""

    base_url: str
    api_key: SecretStr | None
    key_hint: str
    key_required: bool
    model: str | None


def resolve_settings(
    vendor: VendorSettings,
    *,
    base_url: str | None,
    api_key: str | SecretStr | None,
    api_key_env: str | None,
    model: str | None,
) -> ResolvedSettings:
    """Arguments first, then the environment, then the vendor's defaults."""
    env = os.environ
    source = "argument"
    if not base_url:
        source = next((name for name in vendor.base_url_envs if env.get(name)), "default")
        base_url = env[source] if source != "default" else vendor.default_base_url
    base_url = check_base_url(base_url, vendor.name)
    own_host = urlparse(vendor.default_base_url).hostname
    is_vendor = source in ("default", vendor.vendor_base_url_env) or (
        urlparse(base_url).hostname == own_host
    )

    key: str | None = None
    origin = ""
    if api_key is not None:
        key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else str(api_key)
        origin = "the api_key argument"
    elif api_key_env:
        key = env.get(api_key_env)
        origin = f"the environment variable {api_key_env}"
    else:
        for name, allowed in ((vendor.generic_key_env, True), (vendor.vendor_key_env, is_vendor)):
            if name and allowed and env.get(name):
                key, origin = env[name], f"the environment variable {name}"
                break

    if key:
        hint = f"The key came from {origin}; check that it is valid for {base_url}."
    elif api_key_env:
        hint = f"No API key was sent: the environment variable {api_key_env} is not set."
    else:
        names = " or ".join(n for n in (vendor.generic_key_env, vendor.vendor_key_env) if n)
        hint = f"No API key was sent: pass api_key= or api_key_env=, or set {names}."
        if not is_vendor:
            hint += f" ({vendor.vendor_key_env} is only sent to {own_host}.)"

    if not model:
        model = next((env[name] for name in vendor.model_envs if env.get(name)), None)
    return ResolvedSettings(
        base_url=base_url,
        api_key=SecretStr(key) if key else None,
        key_hint=hint,
        key_required=is_vendor,
        model=model,
    )


class HTTPProvider(ABC):
    """The shared skeleton of an LLM provider over HTTP: checks, one endpoint, `complete`, `stream`.

    Subclasses convert a `PreparedRequest` to their wire format (`_body`) and read the reply
    (`_parse`, `_events`). `async with provider:` pools connections for the calls inside it;
    outside such a block each call uses connections of its own, closed when it ends.
    """

    vendor: VendorSettings

    def __init__(
        self,
        settings: ResolvedSettings,
        *,
        path: str,
        headers: Mapping[str, str],
        auth_header: str,
        auth_prefix: str,
        not_found_hint: str,
        options: LLMOptions | None,
        timeout: float,
        retry: RetryPolicy | None,
        http_client: httpx.AsyncClient | None,
    ) -> None:
        if timeout <= 0:
            raise LLMConfigurationError(f"{self.vendor.name}: timeout must be > 0, got {timeout}")
        self.base_url = settings.base_url
        self._settings = settings
        self._defaults = LLMOptions(model=settings.model, timeout=timeout).merged(options)
        self._endpoint = HTTPEndpoint(
            provider=self.vendor.name,
            url=f"{settings.base_url}{path}",
            headers={"user-agent": "jianmu-bt", **headers},
            api_key=settings.api_key,
            auth_header=auth_header,
            auth_prefix=auth_prefix,
            key_hint=settings.key_hint,
            not_found_hint=not_found_hint,
            retry=retry or RetryPolicy(),
            http_client=http_client,
        )

    @property
    def model(self) -> str | None:
        """The default model of this provider."""
        return self._defaults.model

    @property
    def url(self) -> str:
        """The full URL requests are POSTed to."""
        return self._endpoint.url

    def __repr__(self) -> str:
        key = "set" if self._settings.api_key else "none"
        return (
            f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, "
            f"api_key={key})"
        )

    def _prepare(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: ToolsInput,
        options: LLMOptions | None,
    ) -> PreparedRequest:
        names = " or ".join(self.vendor.model_envs)
        request = prepare_request(
            messages,
            tools,
            options,
            self._defaults,
            missing_model_hint=f"pass model= or LLMOptions(model=...), or set {names}",
        )
        if self._settings.key_required and self._settings.api_key is None:
            raise LLMConfigurationError(
                f"{self.vendor.name}: no API key for {self.base_url}. {self._settings.key_hint}",
                provider=self.vendor.name,
                url=self.url,
            )
        return request

    def _timeout(self, request: PreparedRequest) -> float:
        return request.options.timeout or DEFAULT_TIMEOUT

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: ToolsInput = None,
        options: LLMOptions | None = None,
    ) -> LLMResponse:
        """Send the conversation; the whole assistant reply (see `LLMProvider.complete`)."""
        request = self._prepare(messages, tools, options)
        data = await self._endpoint.post_json(
            self._body(request, stream=False), model=request.model, timeout=self._timeout(request)
        )
        return self._parse(data, request)

    async def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: ToolsInput = None,
        options: LLMOptions | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Send the conversation; the reply as events ending with `StreamCompleted`.

        Close it early with `contextlib.aclosing` when not reading it to the end.
        """
        request = self._prepare(messages, tools, options)
        async with aclosing(self._events(request)) as events:
            async for event in events:
                yield event

    async def _server_events(self, request: PreparedRequest) -> AsyncIterator[ServerSentEvent]:
        """POST `request` as a stream and yield the reply's server-sent events (for `_events`)."""
        body = self._body(request, stream=True)
        stream = self._endpoint.stream_events(
            body, model=request.model, timeout=self._timeout(request)
        )
        async with aclosing(stream) as events:
            async for event in events:
                yield event

    def _stream_error(
        self,
        message: Any,
        model: str,
        *,
        kind: str = "an error",
        error: type[LLMError] = LLMServerError,
    ) -> LLMError:
        """The error for an error the server reported inside a stream (its message redacted)."""
        name = self.vendor.name
        return error(
            f"{name}: the server reported {kind} inside the stream from POST {self.url} "
            f"for model {model!r}: {self._endpoint.redact(str(message))}",
            provider=name,
            url=self.url,
            model=model,
        )

    @abstractmethod
    def _body(self, request: PreparedRequest, *, stream: bool) -> dict[str, Any]:
        """The vendor's JSON request body."""

    @abstractmethod
    def _parse(self, data: dict[str, Any], request: PreparedRequest) -> LLMResponse:
        """The reply of a non-streaming request."""

    @abstractmethod
    def _events(self, request: PreparedRequest) -> AsyncIterator[StreamEvent]:
        """Stream the request and translate the vendor's events."""

    async def open(self) -> None:
        """Pool connections in the running event loop until `aclose()` (`async with` does both).

        Without it every call opens and closes its own connections, which is always safe.
        """
        await self._endpoint.open()

    async def aclose(self) -> None:
        """Close the connections `open()` pooled in the running event loop."""
        await self._endpoint.aclose()

    async def __aenter__(self) -> Self:
        await self._endpoint.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

"""What the HTTP providers share: where the URL, key and model come from, and the call skeleton.

Key safety: a vendor's own key variable (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`) is sent only to
that vendor's host (its default URL, its own `*_BASE_URL` variable, or a base URL on its host).
Pointing the provider at another server never sends it a key it was not given for that server:
pass `api_key=`, `api_key_env=`, or (OpenAI-compatible) set `JIANMU_LLM_API_KEY`.
"""

from __future__ import annotations

import os
from abc import abstractmethod
from collections.abc import AsyncGenerator, Collection, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict
from urllib.parse import urlparse

import httpx
from pydantic import SecretStr

from jianmu_bt.llm.base import LLMOptions, LLMResponse, StreamEvent, ToolsInput
from jianmu_bt.llm.errors import LLMConfigurationError, LLMError, LLMServerError
from jianmu_bt.llm.http_errors import DEFAULT_RETRY_STATUSES
from jianmu_bt.llm.provider import ProviderBase
from jianmu_bt.llm.request import PreparedRequest
from jianmu_bt.llm.round_trip import origin_of
from jianmu_bt.llm.transport import HTTPEndpoint, check_base_url
from jianmu_bt.tools.retry import RetryPolicy

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


class HTTPSettings(TypedDict, total=False):
    """The keyword settings every HTTP provider takes (see `HTTPProvider`)."""

    api_key_env: str | None
    options: LLMOptions | None
    timeout: float
    retry: RetryPolicy | None
    retry_statuses: Collection[int] | None
    headers: Mapping[str, str] | None
    http_client: httpx.AsyncClient | None


class HTTPProvider(ProviderBase):
    """The shared skeleton of an LLM provider over HTTP: settings, one endpoint, the call flow.

    The settings every vendor takes: `model`, `base_url`, `api_key` (else `api_key_env`, else the
    vendor's variables), default `options`, `timeout` (seconds per request), `retry` (a
    `RetryPolicy`), `retry_statuses` (the HTTP statuses worth a retry; 408, 409, 429, 5xx and 529
    by default), `headers` added to every request and an `http_client` of the caller's.

    Subclasses name their vendor, path and key header as class attributes, convert a
    `PreparedRequest` to their wire format (`_body`) and read the reply (`_parse`, `_events`).
    `async with provider:` pools connections for the calls inside it; outside such a block each
    call uses connections of its own, closed when it ends.
    """

    vendor: VendorSettings
    path: ClassVar[str]
    auth_header: ClassVar[str]
    auth_prefix: ClassVar[str] = ""
    price_name: ClassVar[str | None] = None
    """The price table's name for this vendor (default: the vendor's name)."""

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | SecretStr | None = None,
        *,
        api_key_env: str | None = None,
        options: LLMOptions | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        retry_statuses: Collection[int] | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        if timeout <= 0:
            raise LLMConfigurationError(f"{self.vendor.name}: timeout must be > 0, got {timeout}")
        settings = resolve_settings(
            self.vendor, base_url=base_url, api_key=api_key, api_key_env=api_key_env, model=model
        )
        self.base_url = settings.base_url
        self.origin = origin_of(self.vendor.name, settings.base_url)
        # The price table prices the vendor's own host (and hosts it knows by URL, such as
        # DeepSeek's); a model served elsewhere (a local server) has no price unless given one.
        self.price_provider = (
            (self.price_name or self.vendor.name) if settings.key_required else None
        )
        self.price_url = settings.base_url
        self._settings = settings
        self._defaults = LLMOptions(model=settings.model, timeout=timeout).merged(options)
        self._endpoint = HTTPEndpoint(
            provider=self.vendor.name,
            url=f"{settings.base_url}{self.path}",
            headers={"user-agent": "jianmu-bt", **self._vendor_headers(), **(headers or {})},
            api_key=settings.api_key,
            auth_header=self.auth_header,
            auth_prefix=self.auth_prefix,
            key_hint=settings.key_hint,
            not_found_hint=self._not_found_hint(settings.base_url),
            retry=retry or RetryPolicy(),
            retry_statuses=(
                DEFAULT_RETRY_STATUSES if retry_statuses is None else frozenset(retry_statuses)
            ),
            http_client=http_client,
        )

    def _vendor_headers(self) -> dict[str, str]:
        """Headers the vendor's API requires on every request (before the caller's own)."""
        return {}

    def _not_found_hint(self, base_url: str) -> str:
        """What to check about `base_url` when a 404 comes back ("" when nothing stands out)."""
        return ""

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

    def _missing_model_hint(self) -> str:
        return f"pass model= or LLMOptions(model=...), or set {' or '.join(self.vendor.model_envs)}"

    def _prepare(
        self, messages: Sequence[Mapping[str, Any]], tools: ToolsInput, options: LLMOptions | None
    ) -> PreparedRequest:
        request = super()._prepare(messages, tools, options)
        if self._settings.key_required and self._settings.api_key is None:
            raise LLMConfigurationError(
                f"{self.vendor.name}: no API key for {self.base_url}. {self._settings.key_hint}",
                provider=self.vendor.name,
                url=self.url,
            )
        return request

    def _timeout(self, request: PreparedRequest) -> float:
        return request.options.timeout or DEFAULT_TIMEOUT

    def _request_url(self, request: PreparedRequest, *, stream: bool) -> str | None:
        """The URL of this request when it is not the endpoint's one (a URL naming the model,
        as Gemini's and Bedrock's do); None: `self.url`."""
        return None

    async def _answer(self, request: PreparedRequest) -> LLMResponse:
        data = await self._endpoint.post_json(
            self._body(request, stream=False),
            model=request.model,
            timeout=self._timeout(request),
            url=self._request_url(request, stream=False),
        )
        return self._parse(data, request)

    def _answer_stream(self, request: PreparedRequest) -> AsyncGenerator[StreamEvent, None]:
        return self._events(request)

    async def _server_events(
        self, request: PreparedRequest
    ) -> AsyncGenerator[ServerSentEvent, None]:
        """POST `request` as a stream and yield the reply's server-sent events (for `_events`)."""
        body = self._body(request, stream=True)
        stream = self._endpoint.stream_events(
            body,
            model=request.model,
            timeout=self._timeout(request),
            url=self._request_url(request, stream=True),
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
    def _events(self, request: PreparedRequest) -> AsyncGenerator[StreamEvent, None]:
        """Stream the request and translate the vendor's events."""

    async def open(self) -> None:
        """Pool connections in the running event loop until `aclose()` (`async with` does both).

        Without it every call opens and closes its own connections, which is always safe.
        """
        await self._endpoint.open()

    async def aclose(self) -> None:
        """Close the connections `open()` pooled in the running event loop."""
        await self._endpoint.aclose()

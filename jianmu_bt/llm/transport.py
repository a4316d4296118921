"""One vendor endpoint over httpx: the secret, the clients, timeouts, retries and error mapping.

Both HTTP providers sit on an `HTTPEndpoint`; it is the only place that touches the API key. The
key is kept as a `pydantic.SecretStr` and put on each request by an `httpx.Auth` object, so it is
in no client default header, no repr and no log line; any server text quoted in an error is
redacted first.

httpx connection pools belong to the event loop that opened them, and a tree may be run by a
fresh event loop each time (`anyio.run` per run). So a call uses, in this order: the client the
caller passed in; the pooled client `open()` made for the running loop (`async with provider:`);
or a client of its own, closed when the call ends, so nothing outlives its loop. Clients share
one SSL context, which makes a new client cheap (about 0.2 ms instead of 25 ms).
"""

from __future__ import annotations

import functools
import json
import logging
import ssl
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Mapping
from contextlib import aclosing, asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import httpx
from httpx_sse import EventSource, ServerSentEvent
from pydantic import SecretStr

from jianmu_bt.llm.errors import (
    LLMConfigurationError,
    LLMConnectionError,
    LLMResponseError,
    LLMTimeoutError,
)
from jianmu_bt.llm.http_errors import (
    BODY_LIMIT,
    DEFAULT_RETRY_STATUSES,
    ErrorContext,
    error_from_status,
)
from jianmu_bt.llm.retry import call_with_retries
from jianmu_bt.tools.retry import RetryPolicy

logger = logging.getLogger(__name__)

REDACTED = "[redacted]"
CONNECT_TIMEOUT = 10.0  # seconds; a request's own timeout applies when it is shorter
CLOSE_TIMEOUT = 2.0  # seconds allowed to close a stream's connection after a cancellation


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """One process-wide SSL context as httpx builds it (certifi, or SSL_CERT_FILE/SSL_CERT_DIR)."""
    return httpx.create_ssl_context()


class SecretHeaderAuth(httpx.Auth):
    """Puts `prefix + key` into one header of each request; its repr never shows the key."""

    def __init__(self, header: str, secret: SecretStr, prefix: str = "") -> None:
        self._header = header
        self._secret = secret
        self._prefix = prefix

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        """Add the header and send the request once."""
        request.headers[self._header] = self._prefix + self._secret.get_secret_value()
        yield request

    def __repr__(self) -> str:
        return f"SecretHeaderAuth(header={self._header!r}, secret='**********')"


def check_base_url(base_url: str, provider: str) -> str:
    """The base URL without a trailing slash; an error when it is not http(s)."""
    url = str(base_url).strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise LLMConfigurationError(
            f"{provider}: base URL {url!r} must start with http:// or https://",
            provider=provider,
        )
    return url


class HTTPEndpoint:
    """POSTs JSON to one URL and returns the reply's JSON, or its server-sent events.

    `auth_header`/`auth_prefix` say how the key is sent (`Authorization: Bearer <key>`,
    `x-api-key: <key>`); without a key no such header is sent (local servers need none).
    Replies with a status in `retry_statuses` are retried under `retry`.
    """

    def __init__(
        self,
        *,
        provider: str,
        url: str,
        headers: Mapping[str, str],
        api_key: SecretStr | None,
        auth_header: str,
        auth_prefix: str,
        key_hint: str,
        not_found_hint: str,
        retry: RetryPolicy,
        retry_statuses: frozenset[int] = DEFAULT_RETRY_STATUSES,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.provider = provider
        self.url = url
        self.retry = retry
        self.retry_statuses = retry_statuses
        self._headers = dict(headers)
        self._api_key = api_key
        self._auth = SecretHeaderAuth(auth_header, api_key, auth_prefix) if api_key else None
        self._key_hint = key_hint
        self._not_found_hint = not_found_hint
        self._external_client = http_client
        # Pooled clients made by open(), one per event loop that opened one.
        self._pooled: weakref.WeakKeyDictionary[Any, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return f"HTTPEndpoint(provider={self.provider!r}, url={self.url!r}, api_key={key})"

    def redact(self, text: str) -> str:
        """`text` with every occurrence of the API key replaced."""
        key = self._api_key.get_secret_value() if self._api_key else ""
        if len(key) >= 3 and key in text:
            text = text.replace(key, REDACTED)
        return text

    def _context(self, model: str | None) -> ErrorContext:
        return ErrorContext(
            provider=self.provider,
            url=self.url,
            model=model,
            key_hint=self._key_hint,
            not_found_hint=self._not_found_hint,
            redact=self.redact,
        )

    @staticmethod
    def _new_client() -> httpx.AsyncClient:
        return httpx.AsyncClient(verify=shared_ssl_context(), follow_redirects=False)

    async def open(self) -> None:
        """Keep a pooled client for the running event loop until `aclose()`."""
        if self._external_client is None:
            loop = anyio.lowlevel.current_token().native_token
            client = self._pooled.get(loop)
            if client is None or client.is_closed:
                self._pooled[loop] = self._new_client()

    async def aclose(self) -> None:
        """Close the pooled client of the running event loop, if `open()` made one."""
        if self._external_client is None:
            client = self._pooled.pop(anyio.lowlevel.current_token().native_token, None)
            if client is not None:
                await client.aclose()

    @asynccontextmanager
    async def _client(self) -> AsyncIterator[httpx.AsyncClient]:
        if self._external_client is not None:
            yield self._external_client
            return
        pooled = self._pooled.get(anyio.lowlevel.current_token().native_token)
        if pooled is not None and not pooled.is_closed:
            yield pooled
            return
        client = self._new_client()
        try:
            yield client
        finally:
            # Shielded: a cancelled call must still close its sockets.
            with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
                await client.aclose()

    def _timeout(self, seconds: float) -> httpx.Timeout:
        return httpx.Timeout(seconds, connect=min(seconds, CONNECT_TIMEOUT))

    def _timeout_error(self, seconds: float, model: str | None, what: str) -> LLMTimeoutError:
        return LLMTimeoutError(
            f"{self.provider}: {what} from POST {self.url} within {seconds:g} s",
            provider=self.provider,
            url=self.url,
            model=model,
            retryable=self.retry.retry_timeouts,
        )

    def _connection_error(self, exc: Exception, model: str | None, what: str) -> Exception:
        if isinstance(exc, httpx.UnsupportedProtocol):
            return LLMConfigurationError(f"{self.provider}: {exc}", provider=self.provider)
        detail = self.redact(str(exc)) or type(exc).__name__
        return LLMConnectionError(
            f"{self.provider}: {what} {self.url}: {type(exc).__name__}: {detail}",
            provider=self.provider,
            url=self.url,
            model=model,
            retryable=True,
        )

    def malformed(self, model: str | None, problem: str, text: str = "") -> LLMResponseError:
        """The error for a 2xx reply that lacks what it must carry; `text` is quoted, redacted."""
        snippet = self.redact(text)[:200]
        suffix = f": {snippet!r}" if snippet else ""
        return LLMResponseError(
            f"{self.provider}: malformed reply from POST {self.url}: {problem}{suffix}",
            provider=self.provider,
            url=self.url,
            model=model,
            body=self.redact(text)[:BODY_LIMIT] or None,
        )

    def _raise_for_status(self, response: httpx.Response, model: str | None) -> None:
        if response.status_code >= 400:
            raise error_from_status(
                response.status_code,
                response.headers,
                response.text,
                self._context(model),
                self.retry_statuses,
            )

    def _request(
        self,
        client: httpx.AsyncClient,
        body: Mapping[str, Any],
        seconds: float,
        stream: bool,
        url: str | None = None,
    ) -> httpx.Request:
        headers = dict(self._headers)
        if stream:
            headers["accept"] = "text/event-stream"
        return client.build_request(
            "POST", url or self.url, json=body, headers=headers, timeout=self._timeout(seconds)
        )

    def decode_event(self, event: ServerSentEvent, model: str | None) -> Any:
        """The JSON payload of one server-sent event; LLMResponseError when it is not JSON."""
        try:
            return json.loads(event.data)
        except ValueError:
            raise self.malformed(
                model, f"event {event.event or 'message'!r} does not carry JSON", event.data
            ) from None

    async def post_json(
        self, body: Mapping[str, Any], *, model: str | None, timeout: float, url: str | None = None
    ) -> dict[str, Any]:
        """POST `body` (to `url`, default the endpoint's); the reply's JSON object. Retries per
        the policy; LLMError on failure."""

        async def attempt(client: httpx.AsyncClient, remaining: float | None) -> dict[str, Any]:
            seconds = timeout if remaining is None else min(timeout, remaining)
            logger.debug("%s: POST %s model=%s", self.provider, self.url, model)
            try:
                with anyio.fail_after(seconds):
                    request = self._request(client, body, seconds, stream=False, url=url)
                    response = await client.send(request, auth=self._auth)
            except (TimeoutError, httpx.TimeoutException):
                raise self._timeout_error(seconds, model, "no reply") from None
            except httpx.TransportError as exc:
                raise self._connection_error(exc, model, "cannot reach") from None
            self._raise_for_status(response, model)
            try:
                data = response.json()
            except ValueError:
                raise self.malformed(model, "the body is not JSON", response.text) from None
            if not isinstance(data, dict):
                raise self.malformed(model, "the body is not a JSON object", response.text)
            return data

        async with self._client() as client:
            return await call_with_retries(
                functools.partial(attempt, client), self.retry, what=f"{self.provider} {self.url}"
            )

    async def stream_events(
        self, body: Mapping[str, Any], *, model: str | None, timeout: float, url: str | None = None
    ) -> AsyncGenerator[ServerSentEvent, None]:
        """POST `body` (to `url`, default the endpoint's) and yield the reply's server-sent events
        (see `open_stream`)."""
        stream = self.open_stream(body, model=model, timeout=timeout, url=url)
        async with stream as response, aclosing(EventSource(response).aiter_sse()) as events:
            async for event in events:
                yield event

    @asynccontextmanager
    async def open_stream(
        self,
        body: Mapping[str, Any],
        *,
        model: str | None,
        timeout: float,
        url: str | None = None,
        expect: str = "text/event-stream",
    ) -> AsyncIterator[httpx.Response]:
        """POST `body` and give the streaming reply (of content type `expect`) to read.

        Connecting and the reply's status are retried per the policy; once the body flows, an
        error ends the stream (a retry would repeat what the caller has seen). `timeout` bounds
        the wait for the reply's headers and then for each next chunk; a timeout or a broken
        connection while the caller reads becomes an LLMError; the connection is closed when the
        block ends, also when the caller was cancelled.
        """
        target = url or self.url

        async def attempt(client: httpx.AsyncClient, remaining: float | None) -> httpx.Response:
            seconds = timeout if remaining is None else min(timeout, remaining)
            logger.debug("%s: POST %s model=%s (stream)", self.provider, target, model)
            try:
                with anyio.fail_after(seconds):
                    request = self._request(client, body, seconds, stream=True, url=url)
                    response = await client.send(request, auth=self._auth, stream=True)
                    if response.status_code >= 400:
                        try:
                            await response.aread()
                        finally:
                            await response.aclose()
            except (TimeoutError, httpx.TimeoutException):
                raise self._timeout_error(seconds, model, "no reply") from None
            except httpx.TransportError as exc:
                raise self._connection_error(exc, model, "cannot reach") from None
            self._raise_for_status(response, model)
            return response

        async with self._client() as client:
            what = f"{self.provider} {target}"
            response = await call_with_retries(
                functools.partial(attempt, client), self.retry, what=what
            )
            try:
                content_type = response.headers.get("content-type", "")
                if expect not in content_type:
                    text = (await response.aread()).decode("utf-8", "replace")
                    problem = (
                        f"expected an event stream ({expect}), got content-type {content_type!r}"
                    )
                    raise self.malformed(model, problem, text)
                yield response
            except httpx.TimeoutException:
                raise self._timeout_error(timeout, model, "the stream stalled: no data") from None
            except httpx.TransportError as exc:
                raise self._connection_error(exc, model, "the stream broke off from") from None
            finally:
                # Close the connection even when the consumer was cancelled mid-stream.
                with anyio.move_on_after(CLOSE_TIMEOUT, shield=True):
                    await response.aclose()

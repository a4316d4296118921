"""http_request: HTTP calls with httpx, bounded and held to a NetworkPolicy.

Every connection goes through a network backend that resolves the host itself, checks each
address against the policy and connects to a checked address, so the address checked is the
address used (no second lookup an attacker's DNS could answer differently). Redirects are
followed one at a time, each hop checked again, up to a bound. Proxy settings from the
environment are ignored, so a proxy cannot carry a request past the policy.

Hostile servers are bounded too: the whole call has a deadline and each read a timeout of its
own (slow-loris); the header section is capped by httpcore (100 KiB); the body is taken raw and
decoded by `BodyReader`, at most one content coding, never past `max_response_bytes` of decoded
content (decompression bombs), and the bytes read are capped as well (endless or chunked bodies).
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import anyio
import httpcore
import httpx
from pydantic import Field, model_validator

from jianmu_bt.tools.builtin.decoding import BodyReader, content_codings
from jianmu_bt.tools.builtin.model_tool import ModelTool, ToolArguments, ToolFault, reports_faults
from jianmu_bt.tools.builtin.network_policy import NetworkPolicy, NetworkPolicyError, Resolver
from jianmu_bt.tools.builtin.workspace import is_binary

#: httpcore's (h11's) bound on an unfinished header section, chunk header or trailer.
_HEADER_LIMIT: int = httpcore.AsyncHTTP11Connection.MAX_INCOMPLETE_EVENT_SIZE


class PolicyNetworkBackend(httpcore.AsyncNetworkBackend):
    """An httpcore network backend that connects only to addresses a NetworkPolicy allows."""

    def __init__(
        self,
        policy: NetworkPolicy,
        inner: httpcore.AsyncNetworkBackend | None = None,
        resolver: Resolver | None = None,
    ) -> None:
        self.policy = policy
        self.inner = inner or httpcore.AnyIOBackend()
        self.resolver = resolver  # None: the system resolver

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Resolve once, check every address, connect to the first allowed one that answers.

        The inner backend is given IP addresses only, so nothing is resolved a second time.
        """
        try:
            addresses = await self.policy.allowed_addresses(host, port, self.resolver)
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve host '{host}': {exc}") from exc
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self.inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None  # allowed_addresses never returns an empty list
        raise failure

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.AsyncNetworkStream:
        """Unix sockets are local services: always refused."""
        raise NetworkPolicyError("unix sockets are not reachable through http_request")

    async def sleep(self, seconds: float) -> None:
        """Delegate to the inner backend (used by httpcore's retries)."""
        await self.inner.sleep(seconds)


class PolicyTransport(httpx.AsyncHTTPTransport):
    """An httpx transport whose connections go through a PolicyNetworkBackend."""

    def __init__(
        self,
        policy: NetworkPolicy,
        ssl_context: ssl.SSLContext,
        resolver: Resolver | None = None,
    ) -> None:
        super().__init__(verify=ssl_context, trust_env=False)
        # httpx does not take a network backend, so its connection pool is replaced by an
        # identical one built with ours (`_pool` is what handle_async_request uses).
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=10,
            keepalive_expiry=5.0,
            network_backend=PolicyNetworkBackend(policy, resolver=resolver),
        )


class HTTPRequestArgs(ToolArguments):
    url: str = Field(max_length=8192, description="Absolute http:// or https:// URL")
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"] = Field(
        "GET", description="HTTP method"
    )
    headers: dict[str, str] = Field(
        default_factory=dict, max_length=50, description="Request headers"
    )
    params: dict[str, str] = Field(
        default_factory=dict, max_length=100, description="Query parameters added to the URL"
    )
    json_body: Any = Field(None, alias="json", description="JSON request body (any JSON value)")
    body: str | None = Field(None, description="Text request body (instead of json)")
    timeout: float = Field(15.0, gt=0, le=300, description="Seconds for the whole request")
    follow_redirects: bool = Field(True, description="Follow redirects (each one re-checked)")

    @model_validator(mode="after")
    def _one_body(self) -> HTTPRequestArgs:
        if self.json_body is not None and self.body is not None:
            raise ValueError("give either json or body, not both")
        return self


class HTTPRequestTool(ModelTool):
    """Make an HTTP request to a public web address and return the response."""

    name = "http_request"
    description = (
        "Send an HTTP request (GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS) with optional "
        "headers, query parameters and a JSON or text body. Returns status, headers and the "
        "body text (cut at a size limit). Internal and private addresses are refused."
    )
    Arguments = HTTPRequestArgs
    primary_argument = "url"
    output_schema: dict[str, Any] = {
        "type": "object",
        "description": "status, reason, url (final), headers, body, truncated, redirects",
        "properties": {
            "status": {"type": "integer"},
            "reason": {"type": "string"},
            "url": {"type": "string"},
            "headers": {"type": "object"},
            "body": {"type": ["string", "null"]},
            "truncated": {"type": "boolean"},
            "redirects": {"type": "array", "items": {"type": "string"}},
        },
    }
    effect_tags = ("http",)

    def __init__(
        self,
        network_policy: NetworkPolicy | Mapping[str, Any] | None = None,
        *,
        allowed_hosts: Iterable[str] | None = None,
        allow_private: bool = False,
        allowed_networks: Iterable[str] = (),
        max_response_bytes: int = 200_000,
        max_redirects: int = 5,
        user_agent: str = "jianmu-bt http_request",
        read_timeout: float = 30.0,
        resolver: Resolver | None = None,
    ) -> None:
        """`network_policy` (a NetworkPolicy or its fields) wins over the keyword shortcuts.

        `read_timeout` bounds each wait for data from the server (the call's `timeout` bounds
        the whole request); `resolver` replaces the system resolver (tests, custom DNS).
        """
        if isinstance(network_policy, Mapping):
            network_policy = NetworkPolicy.model_validate(network_policy)
        self.policy = network_policy or NetworkPolicy.model_validate(
            {
                "allowed_hosts": None if allowed_hosts is None else tuple(allowed_hosts),
                "allow_private": allow_private,
                "allowed_networks": tuple(allowed_networks),  # text, parsed by the model
            }
        )
        self.max_response_bytes = max_response_bytes
        self.max_redirects = max_redirects
        self.user_agent = user_agent
        self.read_timeout = read_timeout
        self.resolver = resolver
        self._ssl_context: ssl.SSLContext | None = None

    def sandbox_kwargs(self) -> dict[str, Any]:
        """Constructor arguments (JSON) that rebuild this tool, policy included, in a sandbox."""
        return {
            "network_policy": self.policy.model_dump(mode="json"),
            "max_response_bytes": self.max_response_bytes,
            "max_redirects": self.max_redirects,
            "user_agent": self.user_agent,
            "read_timeout": self.read_timeout,
        }

    def ssl_context(self) -> ssl.SSLContext:
        """The TLS context, built once (loading the CA bundle takes milliseconds)."""
        if self._ssl_context is None:
            self._ssl_context = httpx.create_ssl_context(trust_env=False)
        return self._ssl_context

    @reports_faults
    async def run(self, input: HTTPRequestArgs) -> dict[str, Any]:
        try:
            with anyio.fail_after(input.timeout):
                return await self._request(input)
        except (TimeoutError, httpx.HTTPError, httpx.InvalidURL) as exc:
            raise ToolFault(self._failure(input, exc)) from None

    def _failure(self, input: HTTPRequestArgs, exc: Exception) -> str:
        """What went wrong with the request, in words an LLM can act on."""
        url = input.url
        if isinstance(exc, TimeoutError):  # the call's own limit (anyio.fail_after)
            return f"request to {url} timed out after {input.timeout}s"
        if isinstance(exc, httpx.ReadTimeout):
            wait = min(input.timeout, self.read_timeout)
            return f"request to {url} timed out: the server sent nothing for {wait}s (ReadTimeout)"
        if isinstance(exc, httpx.TimeoutException):
            return f"request to {url} timed out: {type(exc).__name__}"
        if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol):
            return f"invalid URL {url!r}: {exc}"
        if isinstance(exc, httpx.RemoteProtocolError) and "buffer too long" in str(exc):
            return (
                f"request to {url} failed: the response's header section (or a chunk header or "
                f"trailer) is larger than {_HEADER_LIMIT // 1024} KiB"
            )
        return f"request to {url} failed: {type(exc).__name__}: {exc}"

    async def _request(self, input: HTTPRequestArgs) -> dict[str, Any]:
        # Identity is asked for; a coding sent anyway is decoded under the cap by BodyReader.
        # The caller's headers replace these case-insensitively.
        headers = httpx.Headers({"User-Agent": self.user_agent, "Accept-Encoding": "identity"})
        headers.update(input.headers)
        self.policy.check_url(httpx.URL(input.url))  # before the client merges anything in
        transport = PolicyTransport(self.policy, self.ssl_context(), self.resolver)
        timeout = httpx.Timeout(input.timeout, read=min(input.timeout, self.read_timeout))
        async with httpx.AsyncClient(
            transport=transport, timeout=timeout, trust_env=False
        ) as client:
            request = client.build_request(
                input.method,
                input.url,
                headers=headers,
                params=input.params or None,
                json=input.json_body,
                content=input.body,
            )
            redirects: list[str] = []
            while True:
                try:
                    self.policy.check_url(request.url)
                    response = await client.send(request, stream=True)
                except NetworkPolicyError as exc:
                    if not redirects:
                        raise
                    raise NetworkPolicyError(
                        f"redirect {len(redirects)} to {request.url} refused: {exc}"
                    ) from None
                follow = response.next_request if input.follow_redirects else None
                try:
                    if follow is None:
                        return await self._result(input, response, redirects)
                    if len(redirects) >= self.max_redirects:
                        raise ToolFault(
                            f"too many redirects: more than {self.max_redirects}, last to "
                            f"{follow.url}"
                        )
                finally:
                    await response.aclose()
                request = follow
                redirects.append(str(request.url))

    async def _result(
        self, input: HTTPRequestArgs, response: httpx.Response, redirects: list[str]
    ) -> dict[str, Any]:
        # Raw bytes, decoded here under the cap: httpx's own decoding has no bound per chunk.
        reader = BodyReader(
            content_codings(response.headers.get_list("content-encoding")),
            self.max_response_bytes,
        )
        if input.method != "HEAD":
            async for chunk in response.aiter_raw():
                if not reader.feed(chunk):
                    break
        data, truncated = reader.body(), reader.truncated
        result: dict[str, Any] = {
            "status": response.status_code,
            "reason": response.reason_phrase,
            "url": str(response.url),
            "headers": dict(response.headers.items()),
            "body": None,
            "truncated": truncated,
            "redirects": redirects,
        }
        content_type = response.headers.get("content-type", "")
        if is_binary(data):
            result["body_note"] = f"binary content ({content_type or 'unknown type'}), "
            result["body_note"] += f"{len(data)} bytes not shown"
        else:
            try:
                result["body"] = data.decode(response.charset_encoding or "utf-8", "replace")
            except LookupError:  # a charset Python does not know
                result["body"] = data.decode("utf-8", "replace")
        if reader.note:
            result["note"] = reader.note
        return result

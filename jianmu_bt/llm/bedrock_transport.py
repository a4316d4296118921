"""Bedrock over httpx: SigV4 signing per request, and the binary event stream of ConverseStream.

Two things set Bedrock's HTTP apart from the other vendors', and both come from botocore (the
`bedrock` extra, loaded only when needed) rather than being written here by hand:

- **Signing.** Without a Bedrock API key (`Authorization: Bearer`), each request is signed with
  AWS Signature Version 4 by `SigV4HTTPAuth`, an `httpx.Auth` that runs `botocore.auth.SigV4Auth`
  on the request as httpx is about to send it, so every retry is signed afresh. Credentials come
  from botocore's chain (`AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`,
  profiles, SSO, roles), looked up once in a worker thread (the chain may read files or ask the
  instance metadata service) and refreshed by botocore when they expire.
- **Streaming.** ConverseStream answers `application/vnd.amazon.eventstream`, binary frames with
  headers (`:message-type`, `:event-type`, `:exception-type`) and a JSON payload, not SSE.
  `BedrockEndpoint.stream_frames` reads the body with the care `HTTPEndpoint.stream_events` takes
  (retries before the first byte, the timeout per chunk, the connection closed on cancellation,
  redacted errors) and decodes it with `botocore.eventstream.EventStreamBuffer`.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import threading
from collections.abc import AsyncGenerator, Generator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any, NamedTuple
from urllib.parse import urlparse

import anyio
import anyio.to_thread
import httpx

from jianmu_bt.llm.errors import LLMConfigurationError, LLMError, LLMResponseError
from jianmu_bt.llm.http_errors import ErrorContext, error_from_status
from jianmu_bt.llm.transport import REDACTED, HTTPEndpoint

logger = logging.getLogger(__name__)

EVENT_STREAM = "application/vnd.amazon.eventstream"
SIGNING_NAME = "bedrock"  # the service name SigV4 signs Bedrock Runtime requests for
EXTRA_HINT = "pip install 'jianmu-bt[bedrock]'"
_SIGNED = ("authorization", "x-amz-date", "x-amz-security-token")
REGION_ENVS = ("AWS_REGION", "AWS_DEFAULT_REGION")
_AWS_HOST = re.compile(r"^bedrock-runtime(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$")


class Botocore(NamedTuple):
    """The botocore modules this package uses."""

    auth: ModuleType
    awsrequest: ModuleType
    eventstream: ModuleType
    session: ModuleType


def load_botocore(why: str) -> Botocore:
    """botocore's modules; LLMConfigurationError naming the `bedrock` extra when it is missing."""
    try:
        import botocore.auth  # type: ignore[import-untyped,import-not-found,unused-ignore]
        import botocore.awsrequest  # type: ignore[import-untyped,import-not-found,unused-ignore]
        import botocore.eventstream  # type: ignore[import-untyped,import-not-found,unused-ignore]
        import botocore.session  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError as exc:
        raise LLMConfigurationError(
            f"bedrock: {why} needs botocore, which is not installed: {EXTRA_HINT} "
            "(or use a Bedrock API key: set AWS_BEARER_TOKEN_BEDROCK or pass api_key=)",
            provider="bedrock",
        ) from exc
    return Botocore(botocore.auth, botocore.awsrequest, botocore.eventstream, botocore.session)


def default_base_url(region: str) -> str:
    """Bedrock Runtime's own URL in `region`."""
    suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"https://bedrock-runtime.{region}.{suffix}"


def _profile_region(profile: str | None) -> str | None:
    try:
        session = load_botocore("reading the region of an AWS profile").session
        region = session.Session(profile=profile).get_config_variable("region")
    except Exception:  # no botocore, or no such profile: the caller asks for a region
        return None
    return str(region) if region else None


def resolve_region(region: str | None, url: str | None, profile: str | None) -> str | None:
    """The AWS region: `region`, else `AWS_REGION` / `AWS_DEFAULT_REGION`, else the one in the
    host of `url` (`bedrock-runtime.<region>.amazonaws.com`), else the AWS profile's."""
    if region:
        return region
    if found := next((os.environ[name] for name in REGION_ENVS if os.environ.get(name)), None):
        return found
    if match := _AWS_HOST.match(urlparse(url or "").hostname or ""):
        return match.group(1)
    return _profile_region(profile)


class SigV4HTTPAuth(httpx.Auth):
    """Signs each request with AWS SigV4 (botocore's signer) for `service` in `region`.

    `profile` picks a named profile of the AWS config files (default: botocore's choice,
    `AWS_PROFILE` or "default"). Credentials are resolved on the first request; none found is
    an LLMConfigurationError. Its repr names no secret.
    """

    requires_request_body = True  # the signature covers the body's SHA-256

    def __init__(
        self, region: str, *, profile: str | None = None, service: str = SIGNING_NAME
    ) -> None:
        self.region = region
        self.profile = profile
        self.service = service
        self._botocore = load_botocore("signing requests with AWS credentials (SigV4)")
        self._credentials: Any = None
        self._secrets: tuple[str, ...] = ()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SigV4HTTPAuth(region={self.region!r}, service={self.service!r})"

    @property
    def method(self) -> str | None:
        """Where botocore found the credentials ("env", "shared-credentials-file", ...)."""
        return getattr(self._credentials, "method", None) if self._credentials else None

    def secrets(self) -> tuple[str, ...]:
        """The secret parts of the credentials used so far (for redaction)."""
        return self._secrets

    def _frozen(self) -> Any:
        """Frozen credentials (blocking: botocore may read files or call a metadata service)."""
        with self._lock:
            if self._credentials is None:
                try:
                    session = self._botocore.session.Session(profile=self.profile)
                    credentials = session.get_credentials()
                except Exception as exc:  # botocore's own errors name the profile or file
                    raise LLMConfigurationError(
                        f"bedrock: cannot load AWS credentials: {type(exc).__name__}: {exc}",
                        provider="bedrock",
                    ) from None
                if credentials is None:
                    raise LLMConfigurationError(
                        "bedrock: no AWS credentials found: set AWS_ACCESS_KEY_ID and "
                        "AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), AWS_PROFILE, or use a "
                        "Bedrock API key (AWS_BEARER_TOKEN_BEDROCK or api_key=)",
                        provider="bedrock",
                    )
                self._credentials = credentials
            frozen = self._credentials.get_frozen_credentials()
            self._secrets = tuple(s for s in (frozen.secret_key, frozen.token) if s)
            return frozen

    def sign(self, request: httpx.Request, credentials: Any) -> None:
        """Add `Authorization`, `X-Amz-Date` (and `X-Amz-Security-Token`) to `request`."""
        headers = {"host": request.headers["host"]}
        if "content-type" in request.headers:
            headers["content-type"] = request.headers["content-type"]
        aws = self._botocore.awsrequest.AWSRequest(
            method=request.method, url=str(request.url), data=request.content, headers=headers
        )
        self._botocore.auth.SigV4Auth(credentials, self.service, self.region).add_auth(aws)
        for name, value in aws.headers.items():
            if name.lower() in _SIGNED:
                request.headers[name] = value

    def sync_auth_flow(
        self, request: httpx.Request
    ) -> Generator[httpx.Request, httpx.Response, None]:
        """Sign and send once (a synchronous client)."""
        self.sign(request, self._frozen())
        yield request

    async def async_auth_flow(
        self, request: httpx.Request
    ) -> AsyncGenerator[httpx.Request, httpx.Response]:
        """Sign and send once; the credential look-up runs in a worker thread."""
        credentials = await anyio.to_thread.run_sync(self._frozen)
        self.sign(request, credentials)
        yield request


@dataclass(frozen=True, slots=True)
class Frame:
    """One decoded event-stream message: `kind` is its `:message-type` ("event", "exception" or
    "error"), `name` its event or exception type (or error code), `payload` the raw bytes."""

    kind: str
    name: str
    payload: bytes
    headers: Mapping[str, Any]


def _frame(message: Any) -> Frame:
    headers = dict(message.headers)
    kind = str(headers.get(":message-type") or "event")
    name = headers.get(":event-type") or headers.get(":exception-type")
    name = name or headers.get(":error-code") or ""
    return Frame(kind, str(name), bytes(message.payload), headers)


class BedrockEndpoint(HTTPEndpoint):
    """An `HTTPEndpoint` that signs with `signer` (when given) and reads binary event streams.

    Without a signer it sends the API key as `HTTPEndpoint` does (a Bedrock API key as
    `Authorization: Bearer`). Error replies name Bedrock's error type (`x-amzn-ErrorType`).
    """

    def __init__(self, *, signer: SigV4HTTPAuth | None = None, **settings: Any) -> None:
        super().__init__(**settings)
        self.signer = signer
        if signer is not None:
            # HTTPEndpoint puts `_auth` on every request it sends; it has no `auth=` parameter.
            self._auth = signer  # type: ignore[assignment]

    def redact(self, text: str) -> str:
        """`text` without the API key, nor the AWS secret key and session token in use."""
        text = super().redact(text)
        for secret in self.signer.secrets() if self.signer else ():
            if len(secret) >= 3 and secret in text:
                text = text.replace(secret, REDACTED)
        return text

    def _context(self, model: str | None) -> ErrorContext:
        context = super()._context(model)
        method = self.signer.method if self.signer else None
        if method:
            hint = f"{context.key_hint} botocore took them from: {method}."
            context = dataclasses.replace(context, key_hint=hint)
        return context

    def _raise_for_status(self, response: httpx.Response, model: str | None) -> None:
        if response.status_code >= 400:
            raise self.status_error(response, model)

    def status_error(self, response: httpx.Response, model: str | None) -> LLMError:
        """The LLMError for an error reply, naming Bedrock's error type when it sent one."""
        error = error_from_status(
            response.status_code,
            response.headers,
            response.text,
            self._context(model),
            self.retry_statuses,
        )
        kind = response.headers.get("x-amzn-errortype", "").split(":")[0].strip()
        if kind and kind not in error.message:
            error.message = f"{error.message} ({kind})"
            error.args = (error.message,)
        return error

    def _request(
        self,
        client: httpx.AsyncClient,
        body: Mapping[str, Any],
        seconds: float,
        stream: bool,
        url: str | None = None,
    ) -> httpx.Request:
        request = super()._request(client, body, seconds, stream, url)
        request.headers["accept"] = EVENT_STREAM if stream else "application/json"
        return request

    def malformed_frame(self, model: str | None, problem: str) -> LLMResponseError:
        """The error for an event stream that cannot be decoded."""
        return self.malformed(model, f"the event stream is broken: {problem}")

    async def stream_frames(
        self, body: Mapping[str, Any], *, model: str | None, timeout: float, url: str
    ) -> AsyncGenerator[Frame, None]:
        """POST `body` to `url` and yield the reply's event-stream messages as they arrive.

        Connecting and the reply's status are retried per the policy; once frames flow, an
        error ends the stream. `timeout` bounds the wait for the headers and then for each chunk.
        """
        decoder = load_botocore("reading a Bedrock event stream").eventstream
        stream = self.open_stream(body, model=model, timeout=timeout, url=url, expect=EVENT_STREAM)
        async with stream as response:
            buffer = decoder.EventStreamBuffer()
            received = consumed = 0
            async for chunk in response.aiter_bytes():
                buffer.add_data(chunk)
                received += len(chunk)
                while True:
                    try:
                        message = next(buffer, None)
                    except decoder.ParserError as exc:
                        problem = f"{type(exc).__name__}: {exc}"
                        raise self.malformed_frame(model, problem) from None
                    if message is None:
                        break
                    consumed += message.prelude.total_length
                    yield _frame(message)
            if received != consumed:
                problem = f"it ended inside a message ({received - consumed} bytes)"
                raise self.malformed_frame(model, problem)

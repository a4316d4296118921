"""Amazon Bedrock's Converse API over httpx: one wire format for every model Bedrock serves.

`POST {base_url}/model/{modelId}/converse` answers JSON, `/converse-stream` a binary AWS event
stream. The base URL is `https://bedrock-runtime.{region}.amazonaws.com` unless `base_url=`,
`endpoint_url=` or `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` names another (a VPC endpoint, a proxy);
the region comes from `region=`, `AWS_REGION`/`AWS_DEFAULT_REGION`, the host or the profile.

Two ways to authenticate:

- a Bedrock API key, sent as `Authorization: Bearer`: `api_key=`, `api_key_env=`, or
  `AWS_BEARER_TOKEN_BEDROCK` (that variable only to Bedrock's own host, like every vendor key);
- otherwise AWS credentials, each request signed with SigV4 by botocore (the `bedrock` extra:
  `pip install 'jianmu-bt[bedrock]'`); signed for another host only with `auth='sigv4'`.
The conversation is converted by `bedrock_wire`, the bytes carried by `bedrock_transport`.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import os
from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from typing import Any, Literal, Unpack
from urllib.parse import quote

from pydantic import SecretStr

from jianmu_bt.llm.base import LLMResponse, StreamCompleted, StreamEvent, Usage
from jianmu_bt.llm.bedrock_transport import (
    BedrockEndpoint,
    Frame,
    SigV4HTTPAuth,
    default_base_url,
    resolve_region,
)
from jianmu_bt.llm.bedrock_wire import (
    STOP_REASONS,
    converse_body,
    is_client_call,
    reasoning_text,
    reply_calls,
    reply_text,
    round_trip_data,
    usage_of,
)
from jianmu_bt.llm.errors import (
    LLMBadRequestError,
    LLMConfigurationError,
    LLMError,
    LLMRateLimitError,
    LLMServerError,
)
from jianmu_bt.llm.http_errors import DEFAULT_RETRY_STATUSES
from jianmu_bt.llm.http_provider import HTTPProvider, HTTPSettings, VendorSettings
from jianmu_bt.llm.request import PreparedRequest
from jianmu_bt.llm.streaming import StreamAssembler
from jianmu_bt.tools.retry import RetryPolicy

KEY_ENV = "AWS_BEARER_TOKEN_BEDROCK"
ENDPOINT_ENV = "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"
MODEL_ENVS = ("BEDROCK_MODEL_ID",)
_STREAM_ERRORS: dict[str, type[LLMError]] = {
    "throttlingException": LLMRateLimitError,
    "validationException": LLMBadRequestError,
}

AuthMode = Literal["auto", "sigv4", "bearer"]
"""How requests are authenticated: "auto" (the Bedrock API key when there is one, else SigV4)."""


class ContentAssembler:
    """Rebuilds a streamed reply's content blocks from `contentBlockStart/Delta/Stop` events,
    in the very shape Converse gives them whole (so the next request can send them back)."""

    def __init__(self) -> None:
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        self._redacted: dict[int, list[bytes]] = {}

    def start(self, index: int, start: Mapping[str, Any]) -> None:
        """A `contentBlockStart` (tool uses and server-tool results announce themselves)."""
        block = {k: dict(v) if isinstance(v, Mapping) else v for k, v in start.items()}
        self._blocks[index] = block
        if "toolUse" in block:
            self._json[index] = []

    def is_client_call(self, index: int) -> bool:
        """True when the block at `index` is a tool call for the client to run."""
        block = self._blocks.get(index)
        return block is not None and is_client_call(block)

    def delta(self, index: int, delta: Mapping[str, Any]) -> None:
        """A `contentBlockDelta`: add its piece to its block (made on its first piece)."""
        block = self._blocks.setdefault(index, {})
        if isinstance(text := delta.get("text"), str):
            cited = block.get("citationsContent")
            if cited is not None:
                cited["content"][0]["text"] += text
            else:
                block["text"] = block.get("text", "") + text
        if "citation" in delta:
            first = {"text": block.pop("text", "")}
            cited = block.setdefault("citationsContent", {"citations": [], "content": [first]})
            cited["citations"].append(delta["citation"])
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, Mapping):
            self._reasoning(index, block, reasoning)
        use = delta.get("toolUse")
        if isinstance(use, Mapping) and index in self._json:
            self._json[index].append(str(use.get("input") or ""))
        result = delta.get("toolResult")
        if isinstance(result, Mapping):  # a server tool's result, kept as it came
            content = block.setdefault("toolResult", {}).setdefault("content", [])
            if "text" in result and content and "text" in content[-1]:
                content[-1]["text"] += str(result["text"])
            else:
                content.append(dict(result))

    def _reasoning(self, index: int, block: dict[str, Any], piece: Mapping[str, Any]) -> None:
        target = block.setdefault("reasoningContent", {})
        if "text" in piece or "signature" in piece:
            text_block = target.setdefault("reasoningText", {"text": ""})
            text_block["text"] += str(piece.get("text") or "")
            if piece.get("signature"):
                text_block["signature"] = text_block.get("signature", "") + piece["signature"]
        if piece.get("redactedContent"):
            try:
                data = base64.b64decode(piece["redactedContent"])
            except (binascii.Error, TypeError, ValueError):
                data = str(piece["redactedContent"]).encode()
            self._redacted.setdefault(index, []).append(data)

    def stop(self, index: int) -> None:
        """A `contentBlockStop`: a call's input JSON is now whole."""
        block = self._blocks.get(index)
        pieces = self._json.pop(index, None)
        if block is not None and pieces is not None:
            raw = "".join(pieces)
            try:
                block["toolUse"]["input"] = json.loads(raw) if raw.strip() else {}
            except ValueError:
                block["toolUse"]["input"] = {"raw_arguments": raw}
        redacted = self._redacted.pop(index, None)
        if block is not None and redacted is not None:
            encoded = base64.b64encode(b"".join(redacted)).decode("ascii")
            block["reasoningContent"]["redactedContent"] = encoded

    def content(self) -> list[dict[str, Any]]:
        """The blocks in their order, each closed (a block never stopped is closed here)."""
        for index in {*self._json, *self._redacted}:
            self.stop(index)
        return [self._blocks[i] for i in sorted(self._blocks) if self._blocks[i]]


class BedrockProvider(HTTPProvider):
    """Any model on Amazon Bedrock through the Converse API (`bedrock-runtime`).

    `model` is a model or inference-profile id (`anthropic.claude-...`, `us.anthropic...`, an
    ARN); `region` and `base_url` / `endpoint_url` say where (see the module docstring);
    `profile` names an AWS profile for the credentials; `auth` forces "sigv4" or "bearer"
    (default "auto": the Bedrock API key when one is given, else SigV4). The other settings
    are `HTTPProvider`'s. Claude's extended thinking is asked for through
    `LLMOptions(extra={"thinking": {"type": "enabled", "budget_tokens": N}})`, which goes into
    `additionalModelRequestFields`; its signed reasoning goes back on the next turn.
    """

    path = "/model"
    auth_header = "authorization"
    price_name = "aws"  # the price table's name for this vendor
    auth_prefix = "Bearer "

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | SecretStr | None = None,
        *,
        region: str | None = None,
        endpoint_url: str | None = None,
        profile: str | None = None,
        auth: AuthMode = "auto",
        **settings: Unpack[HTTPSettings],
    ) -> None:
        if base_url and endpoint_url and base_url != endpoint_url:
            raise LLMConfigurationError(
                "bedrock: base_url and endpoint_url name two URLs; give one", provider="bedrock"
            )
        if auth not in ("auto", "sigv4", "bearer"):
            raise LLMConfigurationError(f"bedrock: auth must be auto, sigv4 or bearer: {auth!r}")
        base_url = base_url or endpoint_url
        env_url = os.environ.get(ENDPOINT_ENV)
        region = resolve_region(region, base_url or env_url, profile)
        if region is None and not (base_url or env_url):
            raise LLMConfigurationError(
                "bedrock: no region: pass region=, set AWS_REGION, or name one in the AWS "
                "profile (or pass base_url=)",
                provider="bedrock",
            )
        self.region = region
        self.vendor = VendorSettings(
            name="bedrock",
            default_base_url=default_base_url(region or "us-east-1"),
            base_url_envs=(ENDPOINT_ENV,),
            vendor_base_url_env=ENDPOINT_ENV,
            vendor_key_env=KEY_ENV,
            generic_key_env=None,
            model_envs=MODEL_ENVS,
        )
        super().__init__(model, base_url, api_key, **settings)
        key = self._settings.api_key
        if auth == "bearer" and key is None:
            raise LLMConfigurationError(
                f"bedrock: auth='bearer' but no Bedrock API key. {self._settings.key_hint}",
                provider="bedrock",
            )
        signer = None
        if auth == "sigv4" or key is None:
            if region is None:
                raise LLMConfigurationError(
                    "bedrock: signing requests (SigV4) needs a region: pass region= or set "
                    "AWS_REGION",
                    provider="bedrock",
                )
            signer = SigV4HTTPAuth(region, profile=profile)
            if auth == "auto" and not self._settings.key_required:
                # Ambient AWS credentials are signed only for Bedrock's own host unless asked.
                raise LLMConfigurationError(
                    f"bedrock: {self.base_url} is not Bedrock's own host; to sign requests to "
                    "it with your AWS credentials pass auth='sigv4' (or give a Bedrock API key)",
                    provider="bedrock",
                )
            key = None
            hint = (
                f"Requests were signed (SigV4) with the AWS credentials botocore found; check "
                f"that they may call bedrock:InvokeModel on this model in {region}."
            )
        else:
            hint = self._settings.key_hint
        self.auth: AuthMode = "bearer" if signer is None else "sigv4"
        self._settings = dataclasses.replace(self._settings, key_required=False, key_hint=hint)
        retry_statuses = settings.get("retry_statuses")
        self._bedrock = BedrockEndpoint(
            signer=signer,
            provider=self.vendor.name,
            url=self.url,
            headers={"user-agent": "jianmu-bt", **(settings.get("headers") or {})},
            api_key=key,
            auth_header=self.auth_header,
            auth_prefix=self.auth_prefix,
            key_hint=hint,
            not_found_hint=self._not_found_hint(self.base_url),
            retry=settings.get("retry") or RetryPolicy(),
            retry_statuses=(
                DEFAULT_RETRY_STATUSES if retry_statuses is None else frozenset(retry_statuses)
            ),
            http_client=settings.get("http_client"),
        )
        self._endpoint = self._bedrock

    def __repr__(self) -> str:
        return (
            f"BedrockProvider(model={self.model!r}, region={self.region!r}, "
            f"base_url={self.base_url!r}, auth={self.auth!r})"
        )

    def _not_found_hint(self, base_url: str) -> str:
        return (
            " (Bedrock model ids look like 'anthropic.claude-...' or an inference profile such "
            "as 'us.anthropic.claude-...'; check that the model is offered in this region)"
        )

    def _request_url(self, request: PreparedRequest, *, stream: bool) -> str:
        operation = "converse-stream" if stream else "converse"
        return f"{self.base_url}/model/{quote(request.model, safe='')}/{operation}"

    def _body(self, request: PreparedRequest, *, stream: bool) -> dict[str, Any]:
        return converse_body(request, origin=self.origin)

    def _reply(
        self, blocks: list[dict[str, Any]], *, usage: Usage | None, stop_reason: Any, model: str
    ) -> LLMResponse:
        reason = STOP_REASONS.get(stop_reason, stop_reason) if stop_reason else None
        return LLMResponse.build(
            reply_text(blocks),
            reply_calls(blocks),
            usage=usage,
            finish_reason=reason,
            model=model,
            reasoning=reasoning_text(blocks),
            provider_data=round_trip_data(self.origin, blocks),
        )

    def _parse(self, data: dict[str, Any], request: PreparedRequest) -> LLMResponse:
        malformed = self._endpoint.malformed
        output = data.get("output")
        message = output.get("message") if isinstance(output, Mapping) else None
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list):
            problem = "missing 'output.message.content' (a list of blocks)"
            raise malformed(request.model, problem, json.dumps(data)[:400])
        for i, block in enumerate(content):
            if not isinstance(block, Mapping) or not block:
                problem = f"'output.message.content[{i}]' is not a content block"
                raise malformed(request.model, problem, str(block))
            if is_client_call(block) and not (
                block["toolUse"].get("toolUseId") and block["toolUse"].get("name")
            ):
                problem = f"'output.message.content[{i}]' (toolUse) needs 'toolUseId' and 'name'"
                raise malformed(request.model, problem, str(block))
        return self._reply(
            [dict(block) for block in content],
            usage=usage_of(data.get("usage")),
            stop_reason=data.get("stopReason"),
            model=request.model,
        )

    def _payload(self, frame: Frame, model: str) -> dict[str, Any]:
        try:
            payload = json.loads(frame.payload) if frame.payload else {}
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            problem = f"event {frame.name!r} does not carry a JSON object"
            text = frame.payload.decode("utf-8", "replace")
            raise self._endpoint.malformed(model, problem, text)
        return payload

    def _frame_error(self, frame: Frame, model: str) -> LLMError:
        """An `exception` (or `error`) message inside the stream, as the matching LLMError."""
        text = frame.payload.decode("utf-8", "replace")
        try:
            said = json.loads(text).get("message") or text
        except (ValueError, AttributeError):
            said = text
        said = said or str(frame.headers.get(":error-message") or "")
        error = _STREAM_ERRORS.get(frame.name, LLMServerError)
        return self._stream_error(said, model, kind=frame.name or frame.kind, error=error)

    async def _events(self, request: PreparedRequest) -> AsyncGenerator[StreamEvent, None]:
        model = request.model
        frames = self._bedrock.stream_frames(
            self._body(request, stream=True),
            model=model,
            timeout=self._timeout(request),
            url=self._request_url(request, stream=True),
        )
        deltas = StreamAssembler()
        blocks = ContentAssembler()
        stop_reason: Any = None
        usage: Usage | None = None
        stopped = False
        async with aclosing(frames) as events:
            async for frame in events:
                if frame.kind != "event":
                    raise self._frame_error(frame, model)
                payload = self._payload(frame, model)
                index = int(payload.get("contentBlockIndex") or 0)
                if frame.name == "contentBlockStart":
                    start = payload.get("start") or {}
                    blocks.start(index, start)
                    if blocks.is_client_call(index):
                        use = start["toolUse"]
                        yield deltas.add_tool_fragment(
                            index, id=use.get("toolUseId"), name=use.get("name")
                        )
                elif frame.name == "contentBlockDelta":
                    delta = payload.get("delta") or {}
                    blocks.delta(index, delta)
                    if isinstance(delta.get("text"), str) and (
                        text := deltas.add_text(delta["text"])
                    ):
                        yield text
                    reasoning = delta.get("reasoningContent")
                    if isinstance(reasoning, Mapping) and (
                        thought := deltas.add_reasoning(str(reasoning.get("text") or ""))
                    ):
                        yield thought
                    use = delta.get("toolUse")
                    if (
                        isinstance(use, Mapping)
                        and use.get("input")
                        and blocks.is_client_call(index)
                    ):
                        yield deltas.add_tool_fragment(index, arguments=str(use["input"]))
                elif frame.name == "contentBlockStop":
                    blocks.stop(index)
                elif frame.name == "messageStop":
                    stopped = True
                    stop_reason = payload.get("stopReason")
                elif frame.name == "metadata":
                    usage = usage_of(payload.get("usage")) or usage
        if not stopped:
            raise self._endpoint.malformed(model, "the stream ended before 'messageStop'")
        yield StreamCompleted(
            self._reply(blocks.content(), usage=usage, stop_reason=stop_reason, model=model)
        )

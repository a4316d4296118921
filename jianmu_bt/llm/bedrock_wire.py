"""Converting OpenAI-shaped conversations to Amazon Bedrock's Converse wire format, and back.

- system messages: `system: [{"text"}, ...]`, in order;
- user content (text, image_url): a user turn of `{"text"}` and
  `{"image": {"format", "source": {"bytes"}}}` blocks;
- assistant `content` and `tool_calls`: an assistant turn of `{"text"}` and
  `{"toolUse": {"toolUseId", "name", "input"}}` blocks;
- tool messages: `{"toolResult": {"toolUseId", "content": [{"text"}], "status"?}}` blocks in
  one user turn;
- the `provider_data` of a reply from this origin: that reply's own blocks, as they came;
- tools and `tool_choice`: `toolConfig: {"tools": [{"toolSpec"}], "toolChoice"}`;
- `max_tokens`, `temperature`: `inferenceConfig: {"maxTokens", "temperature"}`;
- `output_schema`: `outputConfig.textFormat` (a JSON Schema);
- `extra`: Converse's own fields by name (a dict merged into ours), `top_p` / `stop` (or
  `topP` / `stopSequences`) into `inferenceConfig`, anything else into
  `additionalModelRequestFields` (e.g. Claude's `{"thinking": {...}}`).

Turns alternate (consecutive messages of one side are merged) and tool results lead the user turn
after the tool use. A tool result starting with "Error:" gets `status: "error"`. Images go as
base64 `data:` URLs (or `s3://` URIs); Converse fetches no web URLs. Converse has no
`tool_choice: none`: the tools are then left out, unless the conversation already holds tool
blocks (Converse then requires them), and `parallel_tool_calls` has no Converse field.

A reply holding more than text and tool calls (`reasoningContent` with its `signature` or
`redactedContent`, `citationsContent`, server-tool blocks) keeps its blocks in `provider_data`
(`{"origin", "content": [...]}`), and they go back exactly as they came to the same origin, as
Claude's extended thinking with tools requires; only a client `toolUse` block's `"type":
"tool_use"`, which replies carry but requests may not, is left out. Another origin's parts, or
blocks whose tool calls were changed since, are dropped and the message rebuilt.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from typing import Any

from jianmu_bt.llm.base import Usage
from jianmu_bt.llm.errors import InvalidRequestError
from jianmu_bt.llm.request import PreparedRequest
from jianmu_bt.llm.round_trip import kept_parts
from jianmu_bt.tools import ToolCall
from jianmu_bt.tools.calls import ERROR_PREFIX

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}
"""Converse stop reasons in `FINISH_REASONS` words; any other reason maps to "other"."""

PLAIN_BLOCKS = frozenset({"text", "toolUse"})
"""Block kinds a message's text and tool calls rebuild exactly; any other kind in a reply keeps
the reply's blocks in `provider_data`."""

BODY_FIELDS = frozenset(
    {
        "system",
        "inferenceConfig",
        "toolConfig",
        "guardrailConfig",
        "additionalModelRequestFields",
        "additionalModelResponseFieldPaths",
        "promptVariables",
        "requestMetadata",
        "performanceConfig",
        "serviceTier",
        "outputConfig",
    }
)
"""Converse request fields an `extra` key may name directly (a dict is merged into ours)."""

INFERENCE_KEYS = {
    "maxTokens": "maxTokens",
    "temperature": "temperature",
    "topP": "topP",
    "top_p": "topP",
    "stopSequences": "stopSequences",
    "stop_sequences": "stopSequences",
    "stop": "stopSequences",
}
"""`extra` keys that belong in `inferenceConfig` (OpenAI's spelling accepted)."""

IMAGE_FORMATS = {"png": "png", "jpeg": "jpeg", "jpg": "jpeg", "gif": "gif", "webp": "webp"}


def block_kind(block: Mapping[str, Any]) -> str:
    """The kind of a Converse content block: its one key ("text", "toolUse", ...)."""
    return next(iter(block), "") if len(block) == 1 else ",".join(sorted(block))


def is_client_call(block: Mapping[str, Any]) -> bool:
    """True for a `toolUse` block the client must run (not a server tool the service ran)."""
    use = block.get("toolUse")
    return isinstance(use, Mapping) and use.get("type") != "server_tool_use"


# --- request ---------------------------------------------------------------------------------


def _image_block(where: str, part: Mapping[str, Any]) -> dict[str, Any]:
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else image
    if not isinstance(url, str) or not url:
        raise InvalidRequestError(f"{where}: an image_url part needs a 'url'")
    if url.startswith("s3://"):
        name = url.rsplit(".", 1)[-1].lower()
        kind = IMAGE_FORMATS.get(name)
        if kind is None:
            raise InvalidRequestError(f"{where}: cannot tell the image format of {url!r}")
        return {"image": {"format": kind, "source": {"s3Location": {"uri": url}}}}
    if not url.startswith("data:"):
        raise InvalidRequestError(
            f"{where}: Bedrock takes images as base64 data: URLs or s3:// URIs, not {url[:40]!r}"
        )
    header, _, data = url.partition(",")
    media_type, *params = header[len("data:") :].split(";")
    kind = IMAGE_FORMATS.get(media_type.removeprefix("image/").lower())
    if kind is None or "base64" not in params:
        raise InvalidRequestError(
            f"{where}: Bedrock takes base64 png, jpeg, gif or webp images, got {header!r}"
        )
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequestError(f"{where}: the image data is not valid base64") from None
    return {"image": {"format": kind, "source": {"bytes": data}}}


def _content_blocks(where: str, content: Any) -> list[dict[str, Any]]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"text": content}]
    blocks: list[dict[str, Any]] = []
    for i, part in enumerate(content):
        kind = part.get("type")
        if kind == "text":
            if part.get("text"):
                blocks.append({"text": str(part["text"])})
        elif kind == "image_url":
            blocks.append(_image_block(f"{where}.content[{i}]", part))
        else:
            raise InvalidRequestError(
                f"{where}.content[{i}]: content part type {kind!r} cannot be sent to Bedrock "
                "(text and image_url can)"
            )
    return blocks


def _tool_use_block(openai_call: Mapping[str, Any]) -> dict[str, Any]:
    call = ToolCall.from_dict(openai_call)
    arguments = call.arguments
    if not isinstance(arguments, Mapping):
        # The model once produced arguments that are not a JSON object; keep them visible.
        arguments = {"raw_arguments": arguments}
    return {"toolUse": {"toolUseId": call.id, "name": call.name, "input": dict(arguments)}}


def _sent_back(block: Mapping[str, Any]) -> dict[str, Any]:
    """A reply's block as the next request carries it (see the module docstring)."""
    use = block.get("toolUse")
    if isinstance(use, Mapping) and use.get("type") == "tool_use":
        return {"toolUse": {k: v for k, v in use.items() if k != "type"}}
    return dict(block)


def _own_blocks(message: Mapping[str, Any], origin: str) -> list[dict[str, Any]] | None:
    """The reply's blocks as received, when they came from `origin` and still match its calls."""
    blocks = kept_parts(message, origin, "content", _tool_use_id)
    return None if blocks is None else [_sent_back(block) for block in blocks]


def _tool_use_id(block: Mapping[str, Any]) -> str | None:
    return block["toolUse"].get("toolUseId") if is_client_call(block) else None


def _tool_result(where: str, message: Mapping[str, Any]) -> dict[str, Any]:
    content = message["content"]
    blocks = _content_blocks(where, content)
    result: dict[str, Any] = {"toolUseId": message["tool_call_id"], "content": blocks}
    if isinstance(content, str) and content.lstrip().startswith(ERROR_PREFIX):
        result["status"] = "error"
    return {"toolResult": result}


def _blocks_of(
    index: int, message: Mapping[str, Any], origin: str
) -> tuple[str, list[dict[str, Any]]]:
    role = message["role"]
    where = f"messages[{index}] ({role})"
    if role == "tool":
        return "user", [_tool_result(where, message)]
    if role == "assistant":
        own = _own_blocks(message, origin)
        if own is not None:
            return "assistant", own
        blocks = _content_blocks(where, message.get("content") or message.get("refusal"))
        blocks += [_tool_use_block(call) for call in message.get("tool_calls", [])]
        return "assistant", blocks
    return "user", _content_blocks(where, message["content"])


def converse_messages(
    messages: list[dict[str, Any]], origin: str = ""
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The `system` blocks and the alternating turns for already-normalised `messages` (with
    the round-trip blocks of replies from `origin`)."""
    system: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if message["role"] == "system":
            where = f"messages[{index}] (system)"
            for block in _content_blocks(where, message["content"]):
                if "text" not in block:
                    raise InvalidRequestError(f"{where}: a system message can only hold text")
                system.append(block)
            continue
        side, blocks = _blocks_of(index, message, origin)
        if not blocks:
            continue  # Converse rejects empty turns and blank text blocks
        if turns and turns[-1]["role"] == side:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": side, "content": blocks})
    return system, turns


def _tool_config(
    request: PreparedRequest, turns: Sequence[Mapping[str, Any]]
) -> dict[str, Any] | None:
    choice = request.options.tool_choice
    uses_tools = any(
        "toolUse" in block or "toolResult" in block for turn in turns for block in turn["content"]
    )
    if not request.tools or (choice == "none" and not uses_tools):
        return None
    specs = []
    for schema in request.tools:
        spec: dict[str, Any] = {
            "name": schema["name"],
            "inputSchema": {"json": schema["parameters"]},
        }
        if schema.get("description"):
            spec["description"] = schema["description"]
        specs.append({"toolSpec": spec})
    config: dict[str, Any] = {"tools": specs}
    if choice == "auto":
        config["toolChoice"] = {"auto": {}}
    elif choice == "required":
        config["toolChoice"] = {"any": {}}
    elif choice and choice != "none":
        config["toolChoice"] = {"tool": {"name": choice}}
    return config


def _merge_extra(body: dict[str, Any], extra: Mapping[str, Any]) -> None:
    inference: dict[str, Any] = body.setdefault("inferenceConfig", {})
    additional: dict[str, Any] = body.setdefault("additionalModelRequestFields", {})
    for key, value in extra.items():
        if key in INFERENCE_KEYS:
            name = INFERENCE_KEYS[key]
            inference[name] = (
                [value] if name == "stopSequences" and isinstance(value, str) else value
            )
        elif key in BODY_FIELDS:
            before = body.get(key)
            if isinstance(before, dict) and isinstance(value, Mapping):
                body[key] = {**before, **value}
            else:
                body[key] = value
        else:
            additional[key] = value
    for key in ("inferenceConfig", "additionalModelRequestFields"):
        if not body[key]:
            del body[key]


def converse_body(request: PreparedRequest, *, origin: str = "") -> dict[str, Any]:
    """The Converse (and ConverseStream) request body for `request`; the model is in the URL."""
    options = request.options
    system, turns = converse_messages(request.messages, origin)
    body: dict[str, Any] = {"messages": turns}
    if system:
        body["system"] = system
    inference: dict[str, Any] = {}
    if options.max_tokens is not None:
        inference["maxTokens"] = options.max_tokens
    if options.temperature is not None:
        inference["temperature"] = options.temperature
    body["inferenceConfig"] = inference
    if (tool_config := _tool_config(request, turns)) is not None:
        body["toolConfig"] = tool_config
    if options.output_schema is not None:
        schema = {
            "schema": json.dumps(options.output_schema, ensure_ascii=False),
            "name": options.output_name or "final_result",
        }
        text_format = {"type": "json_schema", "structure": {"jsonSchema": schema}}
        body["outputConfig"] = {"textFormat": text_format}
    _merge_extra(body, options.extra)
    return body


# --- reply -----------------------------------------------------------------------------------


def reply_text(blocks: Sequence[Mapping[str, Any]]) -> str:
    """The answer's text: `text` blocks and the generated text of `citationsContent` blocks."""
    pieces: list[str] = []
    for block in blocks:
        if isinstance(block.get("text"), str):
            pieces.append(block["text"])
        cited = block.get("citationsContent")
        if isinstance(cited, Mapping):
            pieces += [str(c.get("text") or "") for c in cited.get("content") or []]
    return "".join(pieces)


def reasoning_text(blocks: Sequence[Mapping[str, Any]]) -> str:
    """The readable reasoning of `blocks` (their `reasoningText` texts, joined)."""
    texts = []
    for block in blocks:
        reasoning = block.get("reasoningContent")
        if isinstance(reasoning, Mapping) and isinstance(reasoning.get("reasoningText"), Mapping):
            texts.append(str(reasoning["reasoningText"].get("text") or ""))
    return "\n\n".join(texts).strip()


def reply_calls(blocks: Sequence[Mapping[str, Any]]) -> list[ToolCall]:
    """The client tool calls of `blocks` (server tools are not ours to run)."""
    calls = []
    for block in blocks:
        if is_client_call(block):
            use = block["toolUse"]
            call = {"id": use.get("toolUseId"), "name": use.get("name"), "input": use.get("input")}
            calls.append(ToolCall.from_dict(call))
    return calls


def usage_of(data: Any) -> Usage | None:
    """The `Usage` of a Converse `usage` object (prompt-cache reads and writes count as input)."""
    if not isinstance(data, Mapping):
        return None
    keys = ("inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens")
    return Usage(
        input_tokens=sum(int(data.get(key) or 0) for key in keys),
        output_tokens=int(data.get("outputTokens") or 0),
    )


def round_trip_data(origin: str, blocks: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The `provider_data` of a reply with `blocks`: None when text and tool calls rebuild it."""
    if all(block_kind(b) in PLAIN_BLOCKS and ("text" in b or is_client_call(b)) for b in blocks):
        return None
    return {"origin": origin, "content": [dict(block) for block in blocks]}

"""Converting OpenAI-shaped conversations to the Anthropic Messages wire format.

| OpenAI shape                           | Anthropic Messages                                     |
|----------------------------------------|--------------------------------------------------------|
| system messages                        | the top-level `system` text (joined, in order)         |
| user content                           | a user turn with `text` (and `image`) blocks           |
| assistant `content` + `tool_calls`     | an assistant turn: a `text` block, `tool_use` blocks   |
| tool messages (`tool_call_id`)         | `tool_result` blocks (`tool_use_id`) in one user turn  |
| `provider_data` of this origin         | the reply's own blocks, exactly as received            |

Consecutive messages that land on the same side are merged into one turn, because the API wants
turns to alternate; tool results lead the user turn that follows a tool use, as the API requires
(they directly follow the assistant message, which `normalize_messages` enforces). A tool
result whose text starts with "Error:" is marked `is_error`.

An assistant reply that held more than text and tool calls (`thinking` and `redacted_thinking`
blocks with their signatures, server-tool blocks such as `server_tool_use` and
`web_search_tool_result`) keeps its blocks in `provider_data` (`{"origin", "content": [...]}`),
and they go back as they came, which extended thinking with tools requires. Another provider's
parts are dropped (`jianmu_bt.llm.round_trip`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from jianmu_bt.llm.errors import InvalidRequestError
from jianmu_bt.llm.request import PreparedRequest
from jianmu_bt.llm.round_trip import kept_parts
from jianmu_bt.tools import ToolCall
from jianmu_bt.tools.calls import ERROR_PREFIX

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096

# Anthropic stop reasons in the OpenAI words LLMResponse uses.
FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "refusal",
    "model_context_window_exceeded": "length",
}

PLAIN_BLOCKS: dict[str, set[str]] = {
    "text": {"type", "text"},
    "tool_use": {"type", "id", "name", "input"},
}
"""Blocks (with these keys) rebuilt exactly from a message's text and tool calls; a reply with
any other block, or more in one of these, keeps its blocks in `provider_data`."""


def _image_block(where: str, part: Mapping[str, Any]) -> dict[str, Any]:
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else image
    if not isinstance(url, str) or not url:
        raise InvalidRequestError(f"{where}: an image_url part needs a 'url'")
    if url.startswith("data:"):
        header, _, data = url.partition(",")
        media_type = header[len("data:") :].split(";")[0]
        source = {"type": "base64", "media_type": media_type, "data": data}
        return {"type": "image", "source": source}
    return {"type": "image", "source": {"type": "url", "url": url}}


def _document_block(where: str, part: Mapping[str, Any]) -> dict[str, Any]:
    """A `file` part (`{"file": {"filename", "file_data": "data:...;base64,..."}}`) as a
    `document` block: a PDF as base64, plain text as text."""
    file = part.get("file")
    data = file.get("file_data") if isinstance(file, Mapping) else None
    if not isinstance(data, str) or not data.startswith("data:"):
        raise InvalidRequestError(f"{where}: a file part needs 'file_data' as a data: URL")
    header, _, payload = data.partition(",")
    media_type = header[len("data:") :].split(";")[0]
    block: dict[str, Any] = {"type": "document"}
    if media_type.startswith("text/"):
        text = base64.b64decode(payload).decode("utf-8", "replace")
        block["source"] = {"type": "text", "media_type": "text/plain", "data": text}
    else:
        block["source"] = {"type": "base64", "media_type": media_type, "data": payload}
    if isinstance(file, Mapping) and file.get("filename"):
        block["title"] = str(file["filename"])
    return block


def _content_blocks(where: str, content: Any) -> list[dict[str, Any]]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks = []
    for i, part in enumerate(content):
        kind = part.get("type")
        if kind == "text":
            if part.get("text"):
                blocks.append({"type": "text", "text": str(part["text"])})
        elif kind == "image_url":
            blocks.append(_image_block(f"{where}.content[{i}]", part))
        elif kind == "file":
            blocks.append(_document_block(f"{where}.content[{i}]", part))
        else:
            raise InvalidRequestError(
                f"{where}.content[{i}]: content part type {kind!r} cannot be sent to Anthropic "
                "(text, image_url and file can)"
            )
    return blocks


def _system_text(where: str, content: Any) -> str:
    blocks = _content_blocks(where, content)
    if any(block["type"] != "text" for block in blocks):
        raise InvalidRequestError(f"{where}: a system message can only hold text")
    return "\n".join(block["text"] for block in blocks)


def _tool_use_block(openai_call: Mapping[str, Any]) -> dict[str, Any]:
    call = ToolCall.from_dict(openai_call)
    arguments = call.arguments
    if not isinstance(arguments, Mapping):
        # The model once produced arguments that are not a JSON object; keep them visible.
        arguments = {"raw_arguments": arguments}
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": dict(arguments)}


def _own_blocks(message: Mapping[str, Any], origin: str) -> list[dict[str, Any]] | None:
    """The reply's blocks as received, when they came from `origin` and still match its calls."""
    blocks = kept_parts(message, origin, "content", _tool_use_id)
    return None if blocks is None else [dict(block) for block in blocks]


def _tool_use_id(block: Mapping[str, Any]) -> str | None:
    return block.get("id") if block.get("type") == "tool_use" else None


def _blocks_of(
    index: int, message: Mapping[str, Any], origin: str
) -> tuple[str, list[dict[str, Any]]]:
    role = message["role"]
    where = f"messages[{index}] ({role})"
    if role == "tool":
        content = message["content"]
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message["tool_call_id"],
            "content": content,
        }
        if content.lstrip().startswith(ERROR_PREFIX):
            block["is_error"] = True
        return "user", [block]
    if role == "assistant":
        own = _own_blocks(message, origin)
        if own is not None:
            return "assistant", own
        blocks = _content_blocks(where, message.get("content") or message.get("refusal"))
        blocks += [_tool_use_block(call) for call in message.get("tool_calls", [])]
        return "assistant", blocks
    return "user", _content_blocks(where, message["content"])


def anthropic_messages(
    messages: list[dict[str, Any]], origin: str = ""
) -> tuple[str | None, list[dict[str, Any]]]:
    """The `system` text and the alternating turns for already-normalised `messages` (with the
    round-trip blocks of replies from `origin`)."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if message["role"] == "system":
            system.append(_system_text(f"messages[{index}] (system)", message["content"]))
            continue
        side, blocks = _blocks_of(index, message, origin)
        if not blocks:
            continue  # the API rejects empty turns and empty text blocks
        if turns and turns[-1]["role"] == side:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": side, "content": blocks})
    return ("\n\n".join(s for s in system if s) or None), turns


def anthropic_body(
    request: PreparedRequest, *, stream: bool, default_max_tokens: int, origin: str = ""
) -> dict[str, Any]:
    """The Messages API request body for `request`."""
    options = request.options
    system, turns = anthropic_messages(request.messages, origin)
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": options.max_tokens or default_max_tokens,
        "messages": turns,
    }
    if system:
        body["system"] = system
    tools = [
        {"name": s["name"], "description": s["description"], "input_schema": s["parameters"]}
        for s in request.tools
    ]
    forced = output_tool(options)
    if forced is not None:
        tools.append(forced)
    if tools:
        body["tools"] = tools
        choice: dict[str, Any] | None = None
        if options.tool_choice in ("auto", "none"):
            choice = {"type": options.tool_choice}
        elif options.tool_choice == "required":
            choice = {"type": "any"}
        elif options.tool_choice:
            choice = {"type": "tool", "name": options.tool_choice}
        if options.parallel_tool_calls is False:
            choice = choice or {"type": "auto"}
            if choice["type"] != "none":
                choice["disable_parallel_tool_use"] = True
        if forced is not None and not request.tools and choice is None:
            choice = {"type": "tool", "name": forced["name"]}  # the answer must be the object
        if choice:
            body["tool_choice"] = choice
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if stream:
        body["stream"] = True
    body.update(options.extra)
    return body


def output_tool(options: Any) -> dict[str, Any] | None:
    """The tool a typed answer is given through (`LLMOptions.output_schema`): the Messages API's
    way to make a model answer with an object of a schema. None without an output schema, or
    with extended thinking on (which cannot be combined with a forced tool): the schema in the
    system prompt is then what asks for it."""
    schema = options.output_schema
    thinking = options.extra.get("thinking")
    if schema is None or (isinstance(thinking, Mapping) and thinking.get("type") != "disabled"):
        return None
    if schema.get("type") != "object":  # a tool's input is an object: wrap anything else
        schema = {"type": "object", "properties": {"value": schema}, "required": ["value"]}
    return {
        "name": options.output_name or "final_result",
        "description": "Give your final answer with this tool, in the shape of its input.",
        "input_schema": schema,
    }


def tool_input_text(block: Mapping[str, Any]) -> str | None:
    """The JSON text of a `tool_use` block's input, when the block already carries one."""
    value = block.get("input")
    return json.dumps(value, ensure_ascii=False) if value else None

"""Converting conversations to the OpenAI Responses API (`POST /responses`) and reading replies.

| OpenAI Chat shape               | Responses `input` items                                      |
|---------------------------------|--------------------------------------------------------------|
| system / user messages          | `message` items of that role, in place (`input_text` parts)  |
| assistant `content`             | a `message` item with role `assistant`                       |
| assistant `tool_calls`          | `function_call` items (`call_id`, `name`, `arguments`)       |
| tool messages (`tool_call_id`)  | `function_call_output` items (`call_id`, `output`)           |
| `provider_data` of this origin  | the reply's own `output` items, as received                  |

System messages stay where they are, as `system`-role items (which the API documents beside
`developer` ones), rather than moving to the top-level `instructions`, which holds one text only.

A reply's `output` is a list of items: `reasoning` (a `summary` of readable text and, asked for
with `include: ["reasoning.encrypted_content"]`, the opaque `encrypted_content`), `message`
(`output_text` and `refusal` parts, and a `phase` on newer models), `function_call`, and items of
tools the server ran itself (`web_search_call`, ...). The provider asks statelessly (`store:
false`), so nothing is kept on the server: the reply's items are kept in the assistant message's
`provider_data` (`{"origin", "output": [...]}`) and go back as input items on the next turn to
the same origin, which is how reasoning carries over between turns without server state. Their
server-assigned `id`s are left out while `store` is false (the server could not resolve them and
answers 404 "Items are not persisted when `store` is set to false"), and so are reasoning items
without `encrypted_content`; everything else goes back as it came. When the message's tool calls
no longer match the kept `function_call` items (edited, or renumbered because a server repeated
an id), the message is rebuilt from its text and calls instead, as for any other origin.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from jianmu_bt.llm.base import Usage
from jianmu_bt.llm.errors import InvalidRequestError
from jianmu_bt.llm.openai_chat_wire import text_of
from jianmu_bt.llm.request import TOOL_CHOICE_WORDS, PreparedRequest
from jianmu_bt.llm.round_trip import kept_parts
from jianmu_bt.tools import ToolCall

ENCRYPTED_REASONING = "reasoning.encrypted_content"
"""The `include` value that makes reasoning items carry their `encrypted_content`."""

REPLAYED_TYPES = frozenset({"reasoning", "message", "function_call"})
"""Output item types whose `id` is left out when they go back to a stateless (`store: false`)
request; other items (server tools' calls) go back exactly."""

INCOMPLETE_REASONS = {"max_output_tokens": "length", "content_filter": "content_filter"}
"""`incomplete_details.reason` values in the words `LLMResponse.finish_reason` uses."""

SEPARATOR = "\n\n"
"""What joins the texts of separate message items (and of separate reasoning summaries)."""


# --- requests ---------------------------------------------------------------------------------
def _input_part(where: str, part: Mapping[str, Any]) -> dict[str, Any]:
    kind = part.get("type")
    if kind in ("text", "input_text"):
        return {"type": "input_text", "text": str(part.get("text") or "")}
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else image
        if not isinstance(url, str) or not url:
            raise InvalidRequestError(f"{where}: an image_url part needs a 'url'")
        detail = image.get("detail") if isinstance(image, Mapping) else None
        return {"type": "input_image", "image_url": url, "detail": detail or "auto"}
    if kind == "file":
        file = part.get("file")
        fields = {k: v for k, v in dict(file or {}).items() if k in ("file_data", "file_id")}
        if isinstance(file, Mapping) and file.get("filename"):
            fields["filename"] = file["filename"]
        if not fields.get("file_data") and not fields.get("file_id"):
            raise InvalidRequestError(f"{where}: a file part needs 'file_data' or 'file_id'")
        return {"type": "input_file", **fields}
    raise InvalidRequestError(
        f"{where}: content part type {kind!r} cannot be sent to the Responses API "
        "(text, image_url and file can)"
    )


def _input_content(where: str, content: Any, *, text_only: bool) -> str | list[dict[str, Any]]:
    if content is None or isinstance(content, str):
        return content or ""
    parts = [_input_part(f"{where}.content[{i}]", part) for i, part in enumerate(content)]
    if text_only and any(part["type"] != "input_text" for part in parts):
        raise InvalidRequestError(f"{where}: a system message can only hold text")
    return parts


def _call_item(openai_call: Mapping[str, Any]) -> dict[str, Any]:
    call = ToolCall.from_dict(openai_call)
    arguments = call.arguments
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {"type": "function_call", "call_id": call.id, "name": call.name, "arguments": arguments}


def own_items(message: Mapping[str, Any], origin: str) -> list[dict[str, Any]] | None:
    """The reply's output items as received, when they came from `origin` and still match its
    tool calls (the `function_call` items' `call_id`s, in order); None otherwise."""
    items = kept_parts(message, origin, "output", _call_id)
    return None if items is None else [dict(item) for item in items]


def _call_id(item: Mapping[str, Any]) -> str | None:
    return item.get("call_id") if item.get("type") == "function_call" else None


def _replayed(items: Iterable[dict[str, Any]], keep_ids: bool) -> list[dict[str, Any]]:
    if keep_ids:
        return list(items)
    out = []
    for item in items:
        kind = item.get("type")
        if kind == "reasoning" and not item.get("encrypted_content"):
            continue  # a reference to server state a stateless request cannot use
        if kind in REPLAYED_TYPES:
            item = {key: value for key, value in item.items() if key != "id"}
        out.append(item)
    return out


def _assistant_items(
    where: str, message: Mapping[str, Any], origin: str, keep_ids: bool
) -> list[dict[str, Any]]:
    own = own_items(message, origin)
    if own is not None:
        return _replayed(own, keep_ids)
    items: list[dict[str, Any]] = []
    text = text_of(message.get("content")) or str(message.get("refusal") or "")
    if text:
        items.append({"type": "message", "role": "assistant", "content": text})
    items += [_call_item(call) for call in message.get("tool_calls") or []]
    return items


def responses_input(
    messages: Sequence[Mapping[str, Any]], origin: str = "", *, keep_ids: bool = False
) -> list[dict[str, Any]]:
    """The `input` items for already-normalised `messages` (with the kept output items of
    replies from `origin`; their ids too when `keep_ids`, for a request with `store: true`)."""
    items: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        role = message["role"]
        where = f"messages[{index}] ({role})"
        if role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message["tool_call_id"],
                    "output": message["content"],
                }
            )
        elif role == "assistant":
            items += _assistant_items(where, message, origin, keep_ids)
        else:
            content = _input_content(where, message["content"], text_only=role == "system")
            items.append({"type": "message", "role": role, "content": content})
    return items


def function_tools(schemas: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Our `{"name", "description", "parameters"}` schemas as Responses function tools.

    `strict` is sent as false (the API's default is true, which rejects the many schemas that
    leave properties optional); arguments are checked by the tool layer as for other vendors.
    """
    return [
        {
            "type": "function",
            "name": schema["name"],
            "description": schema["description"],
            "parameters": schema["parameters"],
            "strict": False,
        }
        for schema in schemas
    ]


def responses_body(
    request: PreparedRequest, *, stream: bool, origin: str = "", store: bool = False
) -> dict[str, Any]:
    """The Responses API request body for `request` (`options.extra` merged in last)."""
    options = request.options
    body: dict[str, Any] = {"model": request.model, "store": store}
    if not store:
        body["include"] = [ENCRYPTED_REASONING]
    if request.tools:
        body["tools"] = function_tools(request.tools)
        choice = options.tool_choice
        if choice in TOOL_CHOICE_WORDS:
            body["tool_choice"] = choice
        elif choice:
            body["tool_choice"] = {"type": "function", "name": choice}
        if options.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = options.parallel_tool_calls
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.max_tokens is not None:
        body["max_output_tokens"] = options.max_tokens
    if options.output_schema is not None:
        body["text"] = {
            "format": {
                "type": "json_schema",
                "name": options.output_name or "final_result",
                "schema": options.output_schema,
                "strict": bool(options.output_strict),
            }
        }
    if stream:
        body["stream"] = True
    body.update(options.extra)
    keep_ids = body.get("store") is True
    body["input"] = responses_input(request.messages, origin, keep_ids=keep_ids)
    return body


# --- replies ----------------------------------------------------------------------------------
def _parts(items: Sequence[Mapping[str, Any]], kind: str, field: str) -> list[list[str]]:
    """Per message item, the `field` texts of its content parts of type `kind`."""
    found = []
    for item in items:
        if item.get("type") != "message":
            continue
        texts = [
            str(part.get(field) or "")
            for part in item.get("content") or []
            if isinstance(part, Mapping) and part.get("type") == kind
        ]
        if any(texts):
            found.append(texts)
    return found


def output_text(items: Sequence[Mapping[str, Any]]) -> str:
    """The reply's answer: its messages' `output_text` parts (messages apart by `SEPARATOR`)."""
    return SEPARATOR.join("".join(texts) for texts in _parts(items, "output_text", "text"))


def refusal_text(items: Sequence[Mapping[str, Any]]) -> str:
    """The model's words when it declined (its `refusal` parts), "" when it did not."""
    return SEPARATOR.join("".join(texts) for texts in _parts(items, "refusal", "refusal"))


def reasoning_text(items: Sequence[Mapping[str, Any]]) -> str:
    """The readable reasoning: every reasoning item's summary texts (and `reasoning_text`
    content, which open-weight models' servers send), each apart by `SEPARATOR`."""
    texts = []
    for item in items:
        if item.get("type") != "reasoning":
            continue
        for key, kind in (("summary", "summary_text"), ("content", "reasoning_text")):
            for part in item.get(key) or []:
                if isinstance(part, Mapping) and part.get("type") == kind and part.get("text"):
                    texts.append(str(part["text"]))
    return SEPARATOR.join(texts)


def usage_of(data: Any) -> Usage | None:
    """The `Usage` of a response's `usage` (output tokens include reasoning tokens)."""
    if not isinstance(data, Mapping):
        return None
    return Usage(
        input_tokens=int(data.get("input_tokens") or 0),
        output_tokens=int(data.get("output_tokens") or 0),
        total_tokens=int(data.get("total_tokens") or 0),
    )


def finish_of(data: Mapping[str, Any]) -> str | None:
    """A response's `status` (and `incomplete_details`) as a finish reason; None means the
    ordinary end (`stop`, or `tool_calls` when the reply asks for tools)."""
    status = data.get("status")
    if status in (None, "completed"):
        return None
    if status == "incomplete":
        details = data.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, Mapping) else None
        return INCOMPLETE_REASONS.get(str(reason), str(reason or "incomplete"))
    return str(status)


def round_trip_data(origin: str, items: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The `provider_data` of a reply with these output `items` (None for an empty output)."""
    if not items:
        return None
    return {"origin": origin, "output": [dict(item) for item in items]}

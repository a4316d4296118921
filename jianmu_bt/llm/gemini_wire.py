"""Converting OpenAI-shaped conversations to the Gemini API's `generateContent` wire format.

| OpenAI shape                       | Gemini `generateContent`                                   |
|------------------------------------|------------------------------------------------------------|
| system messages                    | `systemInstruction` (their text, joined)                   |
| user content (text, `image_url`)   | a `user` content: `text`, `inlineData` or `fileData` parts |
| assistant `content`, `tool_calls`  | a `model` content: a `text` part, `functionCall` parts     |
| tool messages (`tool_call_id`)     | `functionResponse` parts, all in one `user` content        |
| `provider_data` of this origin     | the reply's own parts, exactly as received                 |

Gemini 3 hands out a `thoughtSignature` on parts of its replies (the first `functionCall` of a
step, text parts) and rejects the next request unless each comes back exactly where it was. So a
reply keeps its parts in `provider_data` (`{"origin", "parts": [...]}`) and they go back as they
came while the message's text and tool calls still match them (names and arguments, in order);
otherwise, and for another provider's replies, the turn is rebuilt from the message, its first
function call carrying the validator-skipping signature Google documents for turns that Gemini
did not produce (see "Thought signatures" in the Gemini API docs).

A `functionResponse` answers its call by name, and by `id` when the call had one (Gemini 3 gives
ids; older models do not, and then the responses follow the calls' order). The number of
responses must equal the number of calls, in one content: the tool messages after an assistant
message are gathered into one `user` content, in the order of the calls.

Tool parameters and `output_schema` go as JSON Schema (`parametersJsonSchema`,
`responseJsonSchema`); `gemini_schema` first rewrites what Gemini refuses in them.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from jianmu_bt.llm.errors import InvalidRequestError
from jianmu_bt.llm.request import PreparedRequest
from jianmu_bt.llm.round_trip import parts_for
from jianmu_bt.tools import ToolCall
from jianmu_bt.tools.calls import ERROR_PREFIX

API_VERSION = "v1beta"
"""The API version in the request path (the one `parametersJsonSchema` and thinking are in)."""

SKIP_SIGNATURE = "skip_thought_signature_validator"
"""The dummy `thoughtSignature` Google documents for function calls Gemini did not produce."""

FILTERED = (
    "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
    "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION",
)  # fmt: skip
"""The finish reasons (and prompt block reasons) that mean Google's filter stopped the reply."""

FINISH_REASONS = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    **dict.fromkeys(FILTERED, "content_filter"),
}
"""Gemini finish reasons in the words LLMResponse uses; any other word maps to "other"."""

TOOL_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
"""`tool_choice` words as `functionCallingConfig.mode`s (a tool's name: ANY, that tool allowed)."""

_REF_SIBLINGS = ("description", "default")  # all Gemini allows beside a `$ref`
_DATA_KEYS = frozenset({"enum", "default", "examples", "required", "propertyOrdering"})
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "dependentSchemas"})
_DEFS = ("$defs", "definitions")


def model_url(base_url: str, model: str, *, stream: bool, version: str = API_VERSION) -> str:
    """The URL a request for `model` is POSTed to (`models/` is added unless already named)."""
    name = model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"
    path = "/".join(quote(segment, safe="") for segment in name.split("/"))
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    return f"{base_url}/{version}/{path}:{method}"


# --- JSON Schema -----------------------------------------------------------------------------
def gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` as Gemini accepts it: `$schema` dropped, `const` as a one-value `enum`, and local
    `$ref`s inlined (Gemini refuses a `$ref` beside any key but `description` and `default`);
    a recursive `$ref` stays, with its definition kept under `$defs`."""
    defs: dict[str, Any] = {}
    for key in _DEFS:
        found = schema.get(key)
        if isinstance(found, Mapping):
            defs.update({f"#/{key}/{name}": (name, value) for name, value in found.items()})
    kept: dict[str, Any] = {}

    def walk(node: Any, stack: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [walk(item, stack) for item in node]
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref in defs:
            name, target = defs[ref]
            if name not in stack:
                siblings = {k: v for k, v in node.items() if k != "$ref"}
                return walk({**target, **siblings}, stack | {name})
            if name not in kept:  # a recursive reference: keep it, and its definition once
                kept[name] = {}
                kept[name] = walk(target, frozenset({name}))
            kept_ref: dict[str, Any] = {"$ref": f"#/$defs/{name}"}
            return kept_ref | {k: node[k] for k in _REF_SIBLINGS if k in node}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "$schema" or key in _DEFS:
                continue
            if key == "const":
                out.setdefault("enum", [value])
            elif key in _DATA_KEYS:
                out[key] = value
            elif key in _SCHEMA_MAPS and isinstance(value, Mapping):
                out[key] = {name: walk(sub, stack) for name, sub in value.items()}
            else:
                out[key] = walk(value, stack)
        return out

    result: dict[str, Any] = walk(schema, frozenset())
    if kept:
        result["$defs"] = kept
    return result


def function_declaration(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The `functionDeclarations` entry of one `{"name", "description", "parameters"}` tool."""
    declaration: dict[str, Any] = {"name": schema["name"]}
    if schema.get("description"):
        declaration["description"] = schema["description"]
    parameters = schema.get("parameters") or {}
    if parameters.get("properties"):  # a function without parameters leaves them out
        declaration["parametersJsonSchema"] = gemini_schema(parameters)
    return declaration


# --- contents ----------------------------------------------------------------------------------
def _image_part(where: str, part: Mapping[str, Any]) -> dict[str, Any]:
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else image
    if not isinstance(url, str) or not url:
        raise InvalidRequestError(f"{where}: an image_url part needs a 'url'")
    if url.startswith("data:"):
        header, _, data = url.partition(",")
        mime = header[len("data:") :].split(";")[0] or "application/octet-stream"
        return {"inlineData": {"mimeType": mime, "data": data}}
    # A Files API URI (or another URI the API can fetch); the server says when it cannot.
    file_data = {"fileUri": url}
    if mime_type := mimetypes.guess_type(url)[0]:
        file_data["mimeType"] = mime_type
    return {"fileData": file_data}


def _parts(where: str, content: Any) -> list[dict[str, Any]]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"text": content}]
    parts = []
    for i, part in enumerate(content):
        kind = part.get("type")
        if kind == "text":
            if part.get("text"):
                parts.append({"text": str(part["text"])})
        elif kind == "image_url":
            parts.append(_image_part(f"{where}.content[{i}]", part))
        else:
            raise InvalidRequestError(
                f"{where}.content[{i}]: content part type {kind!r} cannot be sent to Gemini "
                "(text and image_url can)"
            )
    return parts


def _arguments(call: ToolCall) -> dict[str, Any]:
    if isinstance(call.arguments, Mapping):
        return dict(call.arguments)
    return {"raw_arguments": call.arguments}  # the model once wrote arguments that are no object


def function_calls(parts: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The `functionCall` objects among `parts`, in order."""
    return [p["functionCall"] for p in parts if isinstance(p.get("functionCall"), Mapping)]


def own_parts(message: Mapping[str, Any], origin: str) -> list[dict[str, Any]] | None:
    """The reply's parts as received, when they came from `origin` and still match the message
    (its text, and its tool calls' names and arguments in order); else None."""
    data = parts_for(message, origin)
    parts = data.get("parts") if data is not None else None
    if not isinstance(parts, list) or not all(isinstance(p, Mapping) for p in parts):
        return None
    calls = function_calls(parts)
    wanted = [ToolCall.from_dict(call) for call in message.get("tool_calls") or []]
    if [(c.get("name"), c.get("args") or {}) for c in calls] != [
        (w.name, _arguments(w)) for w in wanted
    ]:
        return None
    text = "".join(str(p.get("text") or "") for p in parts if not p.get("thought"))
    if text != (message.get("content") or ""):
        return None
    return [dict(part) for part in parts]


def _rebuilt_parts(where: str, message: Mapping[str, Any]) -> list[dict[str, Any]]:
    parts = _parts(where, message.get("content") or message.get("refusal"))
    for i, raw in enumerate(message.get("tool_calls") or []):
        call = ToolCall.from_dict(raw)
        function_call: dict[str, Any] = {"name": call.name, "args": _arguments(call)}
        if call.id:
            function_call["id"] = call.id
        part: dict[str, Any] = {"functionCall": function_call}
        if i == 0:
            part["thoughtSignature"] = SKIP_SIGNATURE
        parts.append(part)
    return parts


def _response_part(message: Mapping[str, Any], name: str, call_id: str | None) -> dict[str, Any]:
    text = str(message.get("content") or "")
    key = "error" if text.lstrip().startswith(ERROR_PREFIX) else "output"
    response: dict[str, Any] = {"name": name, "response": {key: text}}
    if call_id:
        response["id"] = call_id
    return {"functionResponse": response}


class _Contents:
    """Builds the `contents` list: merges neighbours of one role, gathers function responses."""

    def __init__(self) -> None:
        self.contents: list[dict[str, Any]] = []
        self._kinds: list[str] = []
        # tool_call_id -> (position, name, the id Gemini knows the call by) of the open calls
        self.slots: dict[str, tuple[int, str, str | None]] = {}
        self.answers: list[tuple[int, dict[str, Any]]] = []

    def add(self, kind: str, parts: list[dict[str, Any]]) -> None:
        self.flush()
        if not parts:
            return  # the API rejects a content without parts
        if self._kinds and self._kinds[-1] == kind:
            self.contents[-1]["parts"].extend(parts)
        else:
            self.contents.append({"role": "model" if kind == "model" else "user", "parts": parts})
            self._kinds.append(kind)

    def answer(self, message: Mapping[str, Any]) -> None:
        position, name, call_id = self.slots[message["tool_call_id"]]
        self.answers.append((position, _response_part(message, name, call_id)))

    def flush(self) -> None:
        if self.answers:
            parts = [part for _, part in sorted(self.answers, key=lambda answer: answer[0])]
            self.contents.append({"role": "user", "parts": parts})
            self._kinds.append("responses")
            self.answers = []


def gemini_contents(
    messages: Sequence[Mapping[str, Any]], origin: str = ""
) -> tuple[str | None, list[dict[str, Any]]]:
    """The system instruction text and the `contents` for already-normalised `messages` (with
    the parts of replies from `origin` sent back as received)."""
    system: list[str] = []
    built = _Contents()
    for index, message in enumerate(messages):
        role = message["role"]
        where = f"messages[{index}] ({role})"
        if role == "system":
            parts = _parts(where, message["content"])
            if any("text" not in part for part in parts):
                raise InvalidRequestError(f"{where}: a system message can only hold text")
            system.extend(part["text"] for part in parts)
        elif role == "tool":
            built.answer(message)
        elif role == "assistant":
            own = own_parts(message, origin)
            calls = [ToolCall.from_dict(call) for call in message.get("tool_calls") or []]
            if own is None:
                built.add("model", _rebuilt_parts(where, message))
                known = [call.id for call in calls]
            else:
                built.add("model", own)
                known = [call.get("id") for call in function_calls(own)]
            built.slots = {
                str(call.id): (i, call.name, known[i]) for i, call in enumerate(calls) if call.id
            }
        else:
            built.add("user", _parts(where, message["content"]))
    built.flush()
    return ("\n\n".join(s for s in system if s) or None), built.contents


# --- the request body ----------------------------------------------------------------------------
def deep_merge(target: dict[str, Any], extra: Mapping[str, Any]) -> None:
    """Merge `extra` into `target`: mappings key by key, anything else replacing what was there."""
    for key, value in extra.items():
        before = target.get(key)
        if isinstance(value, Mapping) and isinstance(before, dict):
            deep_merge(before, value)
        else:
            target[key] = value


def gemini_body(
    request: PreparedRequest, *, origin: str = "", include_thoughts: bool = False
) -> dict[str, Any]:
    """The `generateContent` request body for `request` (the model is named by the URL).

    `options.extra` is merged in key by key, so `{"generationConfig": {"topP": 0.9}}` adds to
    the generation settings instead of replacing them. `parallel_tool_calls` has no Gemini
    counterpart and is not sent.
    """
    options = request.options
    system, contents = gemini_contents(request.messages, origin)
    body: dict[str, Any] = {"contents": contents}
    if system:
        body["systemInstruction"] = {"parts": [{"text": system}]}
    if request.tools:
        declarations = [function_declaration(schema) for schema in request.tools]
        body["tools"] = [{"functionDeclarations": declarations}]
        choice = options.tool_choice
        if choice:
            config: dict[str, Any] = {"mode": TOOL_MODES.get(choice, "ANY")}
            if choice not in TOOL_MODES:
                config["allowedFunctionNames"] = [choice]
            body["toolConfig"] = {"functionCallingConfig": config}
    generation: dict[str, Any] = {}
    if options.temperature is not None:
        generation["temperature"] = options.temperature
    if options.max_tokens is not None:
        generation["maxOutputTokens"] = options.max_tokens
    if options.output_schema is not None:
        generation["responseMimeType"] = "application/json"
        generation["responseJsonSchema"] = gemini_schema(options.output_schema)
    if include_thoughts:
        generation["thinkingConfig"] = {"includeThoughts": True}
    if generation:
        body["generationConfig"] = generation
    deep_merge(body, options.extra)
    return body

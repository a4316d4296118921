"""MCP tool results <-> ToolResult.

Client side: `isError` becomes a failed ToolResult whose error is the text the server sent;
otherwise the output is the structured content when the server sent some (unwrapped from
`{"result": ...}` when the tool's output schema wraps a non-object), else the text blocks joined
by newlines. Images, audio and resources are summarised in one line each (type, MIME type, size,
URI) so an LLM knows they exist without receiving base64 data; a result with images or audio is
a `MediaText`: that text, with the media kept as content parts (`.parts`) and the structured
content the server sent, if any (`.structured`, used when the tool is served again).

Server side: a ToolResult becomes one text block (`ToolResult.content`), plus structured content
when the output is a JSON object; a failed ToolResult is an `isError` result, never a protocol
error, so the calling model can read it and correct itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from jianmu_bt.tools.base import DEFAULT_OUTPUT_SCHEMA, Tool
from jianmu_bt.tools.calls import ERROR_PREFIX, ToolResult


def base64_size(data: str) -> int | None:
    """The number of bytes the base64 text `data` decodes to, counted without decoding it
    (None when it is not well-formed base64: the padding or the length is off)."""
    length = len(data) - sum(data.count(space) for space in " \t\r\n")  # MIME line breaks
    padding = len(data.rstrip()) - len(data.rstrip().rstrip("="))
    if length % 4 or padding > 2:
        return None
    return length // 4 * 3 - padding


def _decoded_size(data: str | None) -> str:
    if not data:
        return "0 bytes"
    size = base64_size(data)
    return f"{size} bytes" if size is not None else f"{len(data)} base64 characters"


def describe_content_block(block: Any) -> str:
    """The text of a text block; a one-line summary of any other content block."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(getattr(block, "text", ""))
    if kind in ("image", "audio"):
        mime = getattr(block, "mime_type", None) or "unknown type"
        return f"[{kind}: {mime}, {_decoded_size(getattr(block, 'data', None))}]"
    if kind == "resource_link":
        name = getattr(block, "name", None)
        return f"[resource link: {getattr(block, 'uri', '?')}" + (f" ({name})]" if name else "]")
    if kind == "resource":
        resource = getattr(block, "resource", None)
        text = getattr(resource, "text", None)
        if text is not None:
            return str(text)
        uri = getattr(resource, "uri", "?")
        mime = getattr(resource, "mime_type", None) or "unknown type"
        return f"[resource: {uri}, {mime}, {_decoded_size(getattr(resource, 'blob', None))}]"
    return f"[unsupported content block of type {kind!r}]"


class MediaText(str):
    """The text of a result that holds images or audio, with the media kept as content parts.

    It is the text an LLM reads (text blocks, and a one-line stand-in such as
    `[image: image/png, 68 bytes]` per medium), so anything that treats the output as a string
    works unchanged; `parts` keeps every block as an OpenAI-style content part (`text`,
    `image_url` with a `data:` URL, `input_audio`) for code and providers that take media.
    """

    parts: list[dict[str, Any]]
    #: The structured content the server sent with the media (as sent), or None.
    structured: Any

    def __new__(cls, text: str, parts: list[dict[str, Any]], structured: Any = None) -> MediaText:
        made = super().__new__(cls, text)
        made.parts = parts
        made.structured = structured
        return made

    def __reduce__(self) -> tuple[Any, ...]:
        # Copies and pickles keep the parts (str's own reduce would drop them).
        return (MediaText, (str(self), self.parts, self.structured))


#: The `input_audio` format (as OpenAI-style parts name it) of an audio MIME type, where the
#: MIME subtype is not already that name; `AUDIO_MIME_TYPES` is the way back.
AUDIO_FORMATS = {
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
}
AUDIO_MIME_TYPES = {"mp3": "audio/mpeg", "wav": "audio/wav"}


def content_part(block: Any) -> dict[str, Any]:
    """One content block as an OpenAI-style content part (media keep their data)."""
    kind = getattr(block, "type", None)
    data = getattr(block, "data", None) or ""
    mime = getattr(block, "mime_type", None) or "application/octet-stream"
    if kind == "image":
        return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}
    if kind == "audio":
        audio_format = AUDIO_FORMATS.get(mime, mime.split("/")[-1].removeprefix("x-"))
        return {"type": "input_audio", "input_audio": {"data": data, "format": audio_format}}
    return {"type": "text", "text": describe_content_block(block)}


def has_media(content: Any) -> bool:
    """Whether any block is an image or audio."""
    return any(getattr(block, "type", None) in ("image", "audio") for block in content or ())


def content_text(content: Any) -> str:
    """All content blocks as text, one per line."""
    return "\n".join(describe_content_block(block) for block in content or ())


#: The key a server wraps a non-object structured result under (MCP wants an object there).
WRAPPED_RESULT_KEY = "result"


def output_schema_of(tool: Tool) -> dict[str, Any] | None:
    """The `outputSchema` a server advertises for `tool` (always an object schema: a
    non-object one is wrapped as `{"result": X}`), or None when the tool declares none."""
    schema = getattr(tool, "output_schema", None)
    if not isinstance(schema, Mapping) or not schema or dict(schema) == DEFAULT_OUTPUT_SCHEMA:
        return None
    if schema.get("type") == "object":
        return dict(schema)
    key = WRAPPED_RESULT_KEY
    return {"type": "object", "properties": {key: dict(schema)}, "required": [key]}


def wraps_result(output_schema: Mapping[str, Any] | None, tool: Tool) -> bool:
    """Whether `output_schema` (from `output_schema_of(tool)`) wraps the output as `result`."""
    own = getattr(tool, "output_schema", None)
    return output_schema is not None and not (
        isinstance(own, Mapping) and own.get("type") == "object"
    )


def wrapped_schema(output_schema: Any) -> dict[str, Any] | None:
    """The inner schema when `output_schema` is the wrapper `{"result": X}` (only that key,
    required) that servers use for a non-object result, else None."""
    if not isinstance(output_schema, dict) or output_schema.get("type") != "object":
        return None
    properties = output_schema.get("properties")
    if not isinstance(properties, dict) or set(properties) != {WRAPPED_RESULT_KEY}:
        return None
    if output_schema.get("required") != [WRAPPED_RESULT_KEY]:
        return None
    inner = properties[WRAPPED_RESULT_KEY]
    return inner if isinstance(inner, dict) else {}


def call_result_to_tool_result(
    tool: str, result: Any, output_schema: dict[str, Any] | None = None
) -> ToolResult:
    """Convert an SDK `CallToolResult` (or anything shaped like one) into a ToolResult.

    With the tool's `output_schema`, a wrapped structured result (`{"result": 5}` for a tool
    returning a number) is unwrapped: the output is `5`, as the tool returned it.
    """
    text = content_text(getattr(result, "content", None))
    if getattr(result, "is_error", False):
        reason = text.strip() or "the MCP tool reported an error without a message"
        if not reason.startswith(ERROR_PREFIX):
            reason = f"{ERROR_PREFIX} {reason}"
        return ToolResult.failure(tool, reason)
    content = getattr(result, "content", None)
    if has_media(content):
        # Media stay parts; structured content would carry the same base64 as text for an LLM.
        parts = [content_part(block) for block in content or ()]
        structured = getattr(result, "structured_content", None)
        return ToolResult(tool=tool, ok=True, output=MediaText(text, parts, structured))
    structured = getattr(result, "structured_content", None)
    if structured is None:
        return ToolResult(tool=tool, ok=True, output=text)
    if (
        wrapped_schema(output_schema) is not None
        and isinstance(structured, dict)
        and set(structured) == {WRAPPED_RESULT_KEY}
    ):
        structured = structured[WRAPPED_RESULT_KEY]
    return ToolResult(tool=tool, ok=True, output=structured)


def _json_object(value: Any) -> dict[str, Any] | None:
    """`value` as plain JSON when it is a mapping that survives a JSON round trip, else None."""
    if not isinstance(value, dict):
        return None
    try:
        return json.loads(json.dumps(value, ensure_ascii=False))
    except (TypeError, ValueError):
        return None


def tool_result_to_call_result(result: ToolResult) -> Any:
    """Build the SDK `CallToolResult` for a ToolResult (needs the `mcp` SDK)."""
    import mcp_types as types

    text = types.TextContent(type="text", text=result.content)
    if not result.ok:
        return types.CallToolResult(content=[text], is_error=True)
    return types.CallToolResult(content=[text], structured_content=_json_object(result.output))


def error_call_result(message: str) -> Any:
    """An `isError` CallToolResult carrying `message` (prefixed "Error:" when it is not)."""
    import mcp_types as types

    if not message.startswith(ERROR_PREFIX):
        message = f"{ERROR_PREFIX} {message}"
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )

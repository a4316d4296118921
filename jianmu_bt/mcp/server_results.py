"""What the MCP server says about a tool's output: `outputSchema`, `structuredContent`, content.

- A tool with a declared return type (an `output_schema` other than the default "a string")
  advertises an `outputSchema`. MCP requires an object schema there, so a non-object return
  (`-> int`, `-> list[str]`) is wrapped as `{"result": ...}`, as the MCP specification suggests,
  and its `structuredContent` is wrapped the same way. Its text content is the JSON text.
- A tool without one sends `structuredContent` only when the output is a JSON object (and
  holds no media).
- Images and audio in an output stay content blocks (never base64 text): an output that is an
  MCP-shaped block (`{"type": "image", "data": ..., "mimeType": ...}`), an OpenAI-style
  `{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}` or
  `{"type": "input_audio", "input_audio": {"data": ..., "format": "mp3"}}` part, an SDK
  `ImageContent`/`AudioContent`, a list of these mixed with text, or a `MediaText` (the result
  of a tool of another MCP server, served again) becomes the matching blocks
  (a tool with an `outputSchema` sends its `structuredContent` too, as MCP requires).
- A failed ToolResult is an `isError` result with its error text, never a protocol error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from jianmu_bt.mcp.results import (
    AUDIO_MIME_TYPES,
    WRAPPED_RESULT_KEY,
    MediaText,
    output_schema_of,
    wraps_result,
)
from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.calls import ToolResult

_DATA_URL = re.compile(r"^data:(?P<mime>[\w.+-]+/[\w.+-]+);base64,(?P<data>.*)$", re.DOTALL)


def _plain_json(value: Any) -> Any:
    """`value` as plain JSON data (pydantic models dumped), or raise TypeError/ValueError."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        value = dump(mode="json")
    return json.loads(json.dumps(value, ensure_ascii=False, default=_model_default))


def _model_default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def media_block(part: Any) -> Any | None:
    """The SDK image/audio content block for one output part, or None when it is not media."""
    import mcp_types as types

    if isinstance(part, (types.ImageContent, types.AudioContent)):
        return part
    if not isinstance(part, Mapping):
        return None
    kind = part.get("type")
    if kind in ("image", "audio") and isinstance(part.get("data"), str):
        mime = part.get("mimeType") or part.get("mime_type")
        if isinstance(mime, str):
            cls = types.ImageContent if kind == "image" else types.AudioContent
            return cls(type=kind, data=part["data"], mime_type=mime)
    if kind == "input_audio":
        inner = part.get(kind)
        data = inner.get("data") if isinstance(inner, Mapping) else None
        audio_format = inner.get("format") if isinstance(inner, Mapping) else None
        if isinstance(data, str) and isinstance(audio_format, str):
            mime = AUDIO_MIME_TYPES.get(audio_format, f"audio/{audio_format}")
            return types.AudioContent(type="audio", data=data, mime_type=mime)
    if kind in ("image_url", "input_audio"):
        inner = part.get(kind)
        url = inner.get("url") if isinstance(inner, Mapping) else inner
        found = _DATA_URL.match(url) if isinstance(url, str) else None
        if found:
            mime = found["mime"]
            cls = types.ImageContent if mime.startswith("image/") else types.AudioContent
            return cls(type=cls.model_fields["type"].default, data=found["data"], mime_type=mime)
    return None


def content_blocks(output: Any) -> list[Any] | None:
    """Content blocks for an output holding media (images, audio), else None (use `text`)."""
    import mcp_types as types

    if isinstance(output, MediaText):  # a proxied MCP result: its media are in `.parts`
        parts: list[Any] = list(output.parts)
    else:
        parts = output if isinstance(output, list) else [output]
    blocks = [media_block(part) for part in parts]
    if not any(block is not None for block in blocks):
        return None
    out: list[Any] = []
    for part, block in zip(parts, blocks, strict=True):
        if block is not None:
            out.append(block)
        elif isinstance(part, types.TextContent):
            out.append(part)
        elif isinstance(part, Mapping) and part.get("type") == "text" and "text" in part:
            out.append(types.TextContent(type="text", text=str(part["text"])))
        else:
            out.append(types.TextContent(type="text", text=ToolResult("", True, part).content))
    return out


def served_call_result(result: ToolResult, tool: Tool, output_schema: Any = None) -> Any:
    """The SDK `CallToolResult` for `result` of `tool` (`output_schema` from `output_schema_of`)."""
    import mcp_types as types

    text = types.TextContent(type="text", text=result.content)
    if not result.ok:
        return types.CallToolResult(content=[text], is_error=True)
    try:
        data = _plain_json(result.output)
    except (TypeError, ValueError):
        data = None
    if data is not None and not isinstance(result.output, str):
        text = types.TextContent(type="text", text=json.dumps(data, ensure_ascii=False))
    media = content_blocks(result.output)
    content = media if media is not None else [text]
    if output_schema is None:
        structured = data if isinstance(data, dict) and media is None else None
        return types.CallToolResult(content=content, structured_content=structured)
    if isinstance(result.output, MediaText) and result.output.structured is not None:
        # Served again: the structured content exactly as its own server sent it, which fits
        # the schema it listed (and this server lists again).
        return types.CallToolResult(content=content, structured_content=result.output.structured)
    if wraps_result(output_schema, tool):
        missing = data is None and result.output is not None
        structured = None if missing else {WRAPPED_RESULT_KEY: data}
    else:
        structured = data if isinstance(data, dict) else None
    if structured is None:
        message = f"the output of '{tool.name}' does not fit its outputSchema (JSON object)"
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"Error: {message}")], is_error=True
        )
    return types.CallToolResult(content=content, structured_content=structured)


__all__ = ["content_blocks", "media_block", "output_schema_of", "served_call_result"]

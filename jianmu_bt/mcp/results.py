"""MCP tool results <-> ToolResult.

Client side: `isError` becomes a failed ToolResult whose error is the text the server sent;
otherwise the output is the structured content when the server sent some, else the text blocks
joined by newlines. Images, audio and resources are summarised in one line each (type, MIME type,
size, URI) so an LLM knows they exist without receiving base64 data.

Server side: a ToolResult becomes one text block (`ToolResult.content`), plus structured content
when the output is a JSON object; a failed ToolResult is an `isError` result, never a protocol
error, so the calling model can read it and correct itself.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from jianmu_bt.tools.calls import ERROR_PREFIX, ToolResult


def _decoded_size(data: str | None) -> str:
    if not data:
        return "0 bytes"
    try:
        return f"{len(base64.b64decode(data, validate=False))} bytes"
    except (binascii.Error, ValueError):
        return f"{len(data)} base64 characters"


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


def content_text(content: Any) -> str:
    """All content blocks as text, one per line."""
    return "\n".join(describe_content_block(block) for block in content or ())


def call_result_to_tool_result(tool: str, result: Any) -> ToolResult:
    """Convert an SDK `CallToolResult` (or anything shaped like one) into a ToolResult."""
    text = content_text(getattr(result, "content", None))
    if getattr(result, "is_error", False):
        reason = text.strip() or "the MCP tool reported an error without a message"
        if not reason.startswith(ERROR_PREFIX):
            reason = f"{ERROR_PREFIX} {reason}"
        return ToolResult.failure(tool, reason)
    structured = getattr(result, "structured_content", None)
    return ToolResult(tool=tool, ok=True, output=structured if structured is not None else text)


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

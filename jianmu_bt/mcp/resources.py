"""An MCP server's resources as text an LLM (or a tree's state) can take.

`contents_text` turns what `MCPClient.read_resource` returns into one bounded string (each item
through `resource_text`): text contents as they are, a blob decoded when its MIME type is
text-ish, else a one-line stand-in (`[blob application/gzip, 120 bytes, demo://x]`), so no
base64 reaches a model by accident. Nothing past the cut is decoded.
`resource_listing` describes resources and templates compactly (JSON) for a model to choose from.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import json
from collections.abc import Iterable, Sequence
from typing import Any

from jianmu_bt.mcp.results import base64_size

#: Characters of a resource's text kept by default (the rest is cut, and the text says so).
DEFAULT_MAX_CHARS = 100_000
#: Characters of a resource's description kept in a listing.
DESCRIPTION_CHARS = 200
#: MIME types (besides `text/*`) whose blobs are decoded as UTF-8 text.
TEXTUAL_MIME_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/yaml",
        "application/x-yaml",
        "application/javascript",
        "application/toml",
        "application/sql",
        "application/x-ndjson",
        "application/ndjson",
        "application/jsonl",
    }
)


def is_textual(mime_type: str | None) -> bool:
    """Whether content of `mime_type` is text (text/*, JSON, XML, YAML and the like)."""
    if not mime_type:
        return False
    mime = mime_type.split(";", 1)[0].strip().lower()
    return (
        mime.startswith("text/")
        or mime in TEXTUAL_MIME_TYPES
        or mime.endswith(("+json", "+xml", "+yaml"))
    )


def _decoded_text(blob: str, limit: int | None) -> str | None:
    """The UTF-8 text of a base64 `blob`, decoded only as far as `limit` characters need
    (None when it is not UTF-8 or not base64)."""
    whole = limit is None or any(space in blob for space in " \t\r\n")  # MIME line breaks
    # A UTF-8 character takes at most 4 bytes; 3 bytes take 4 base64 characters.
    chunk = blob if whole else blob[: ((4 * (limit or 0) + 2) // 3 + 3) // 4 * 4]
    try:
        data = base64.b64decode(chunk, validate=False)
        decoder = codecs.getincrementaldecoder("utf-8")()
        text = decoder.decode(data, final=len(chunk) == len(blob))
    except (binascii.Error, ValueError):  # UnicodeDecodeError is a ValueError
        return None
    return text if limit is None else text[:limit]


def resource_text(item: Any, limit: int | None = None) -> str:
    """One `TextResourceContents` / `BlobResourceContents` as text (a blob that is not text-ish,
    or not valid base64 / UTF-8, as a one-line stand-in naming its type, size and URI).

    `limit`: only the first `limit` characters are wanted; a text-ish blob is decoded only as
    far as they need. A stand-in's size comes from the base64 length, without decoding."""
    text = getattr(item, "text", None)
    if text is not None:
        return str(text) if limit is None else str(text)[:limit]
    uri = str(getattr(item, "uri", "?"))
    kind = getattr(item, "mime_type", None) or "of unknown type"
    blob = getattr(item, "blob", None) or ""
    size = base64_size(blob)
    if size is None:
        return f"[blob {kind}, {len(blob)} base64 characters, {uri}]"
    if is_textual(getattr(item, "mime_type", None)):
        decoded = _decoded_text(blob, limit)
        if decoded is not None:
            return decoded
    return f"[blob {kind}, {size} bytes, {uri}]"


def _full_length(items: Sequence[Any]) -> int | None:
    """The length of all `items` joined as `contents_text` joins them, when it is known
    without decoding (a text-ish blob's is not: None)."""
    total = 2 * (len(items) - 1) if items else 0
    for item in items:
        text = getattr(item, "text", None)
        if text is None and is_textual(getattr(item, "mime_type", None)):
            return None
        total += len(str(text)) if text is not None else len(resource_text(item))
    return total


def contents_text(contents: Iterable[Any], *, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The contents of a resource read (each item through `resource_text`), joined by blank
    lines and cut at `max_chars` characters; a cut text ends by saying how much was kept.

    Nothing past the cut is decoded or joined: items after it are not looked at."""
    items = list(contents)
    pieces: list[str] = []
    size = 0
    for index, item in enumerate(items):
        if index:
            pieces.append("\n\n")
            size += 2
        # One character more than fits tells that the text goes on past the cut.
        piece = resource_text(item, limit=max(max_chars - size, 0) + 1)
        pieces.append(piece)
        size += len(piece)
        if size > max_chars:
            break
    text = "".join(pieces)
    if size <= max_chars:
        return text
    total = _full_length(items)
    shown = f"{max_chars} of {total}" if total is not None else f"the first {max_chars}"
    return f"{text[:max_chars]}\n[... cut: {shown} characters shown]"


def _short(text: str | None) -> str | None:
    if not text:
        return None
    text = " ".join(text.split())
    return text if len(text) <= DESCRIPTION_CHARS else text[: DESCRIPTION_CHARS - 3] + "..."


def resource_entries(resources: Sequence[Any], templates: Sequence[Any]) -> list[dict[str, Any]]:
    """One small dict per resource (`uri`) and template (`uri_template`): name, MIME type and
    a shortened description, leaving out what the server did not say."""
    entries: list[dict[str, Any]] = []
    for resource in resources:
        entry = {
            "uri": str(resource.uri),
            "name": resource.name or None,
            "mime_type": resource.mime_type,
            "description": _short(resource.description),
        }
        entries.append({k: v for k, v in entry.items() if v is not None})
    for template in templates:
        entry = {
            "uri_template": template.uri_template,
            "name": template.name or None,
            "mime_type": template.mime_type,
            "description": _short(template.description),
        }
        entries.append({k: v for k, v in entry.items() if v is not None})
    return entries


def resource_listing(
    resources: Sequence[Any], templates: Sequence[Any], *, max_chars: int = DEFAULT_MAX_CHARS
) -> str:
    """Resources and templates as compact JSON lines for a model: one object per line; a
    template's `{placeholders}` are to be filled in before reading. Cut at `max_chars`."""
    lines = [
        json.dumps(entry, ensure_ascii=False) for entry in resource_entries(resources, templates)
    ]
    if not lines:
        return "(the server lists no resources)"
    kept: list[str] = []
    size = 0
    for line in lines:
        if size + len(line) + 1 > max_chars:
            kept.append(f"[... {len(lines) - len(kept)} more not shown]")
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept)


__all__ = [
    "DEFAULT_MAX_CHARS",
    "contents_text",
    "is_textual",
    "resource_entries",
    "resource_listing",
    "resource_text",
]

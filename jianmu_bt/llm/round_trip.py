"""What a provider needs back on the next turn: the opaque parts of an assistant reply.

Reasoning models hand out parts that the conversation's next request must carry back exactly,
or the API answers 400: Anthropic's `thinking` / `redacted_thinking` blocks with their signatures
(and server-tool blocks), DeepSeek's `reasoning_content`, Gemini's `thought_signature` on each
tool call, the Responses API's reasoning items. An assistant message keeps them under one key:

```python
{"role": "assistant", "content": "...", "tool_calls": [...],
 "reasoning": "the readable thinking, for people and traces (never sent as such)",
 "provider_data": {"origin": "anthropic@api.anthropic.com", ...what that wire format keeps}}
```

`origin` names the wire format and the host that produced the parts. A provider sends them back
only to the same origin; any other provider (a fallback model, a hand-off to another vendor)
drops them and sends the message's text and tool calls alone, which every API accepts. The rest
of `provider_data` belongs to the wire format that wrote it (`anthropic_wire`, `openai_compat`).
The parts live in the run's state and in the journal's record of each turn, so a resumed run
sends exactly what the interrupted one would have.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlparse

PROVIDER_DATA = "provider_data"
"""The assistant message key holding a provider's round-trip parts."""

REASONING = "reasoning"
"""The assistant message key holding the reply's readable reasoning text."""


def origin_of(wire: str, base_url: str) -> str:
    """The origin of parts a provider of wire format `wire` receives from `base_url`: the wire
    format, the host and, when the URL names one, the port (two local servers on one host are two
    origins)."""
    parsed = urlparse(base_url)
    host = parsed.hostname or base_url
    return f"{wire}@{host}:{parsed.port}" if parsed.port else f"{wire}@{host}"


def parts_for(message: Mapping[str, Any], origin: str) -> Mapping[str, Any] | None:
    """The message's round-trip parts when they came from `origin`, else None."""
    data = message.get(PROVIDER_DATA)
    if isinstance(data, Mapping) and data.get("origin") == origin:
        return data
    return None


def kept_parts(
    message: Mapping[str, Any],
    origin: str,
    key: str,
    call_id: Callable[[Mapping[str, Any]], str | None],
) -> list[Mapping[str, Any]] | None:
    """The parts a provider kept under `key` for a reply from `origin`, when the tool-call ids
    among them (`call_id(part)`, None for a part that is not a client call) are still the
    message's tool-call ids in order; None otherwise (another origin, or calls changed since:
    the turn is rebuilt from the message's text and calls)."""
    data = parts_for(message, origin)
    parts = data.get(key) if data is not None else None
    if not isinstance(parts, list) or not all(isinstance(part, Mapping) for part in parts):
        return None
    used = [found for found in map(call_id, parts) if found is not None]
    if used != [call.get("id") for call in message.get("tool_calls") or []]:
        return None
    return parts


def merge_fields(target: dict[str, Any], fields: Mapping[str, Any]) -> None:
    """Add one streamed chunk's extra fields to those collected so far.

    Text is joined, lists are extended, mappings are merged the same way key by key, and any
    other value replaces the one before; a None never erases what came earlier.
    """
    for key, value in fields.items():
        if value is None:
            continue
        before = target.get(key)
        if isinstance(value, str) and isinstance(before, str):
            target[key] = before + value
        elif isinstance(value, list) and isinstance(before, list):
            target[key] = [*before, *value]
        elif isinstance(value, Mapping) and isinstance(before, dict):
            merge_fields(before, value)
        elif isinstance(value, Mapping):
            merged: dict[str, Any] = {}
            merge_fields(merged, value)
            target[key] = merged
        else:
            target[key] = value

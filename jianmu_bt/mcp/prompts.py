"""An MCP server's prompt (`prompts/get`) as this project's LLM messages.

`prompt_messages` converts a GetPromptResult's messages to the message dicts of
`jianmu_bt.llm.messages` (`{"role": "user" | "assistant", "content": ...}`): text as it is, an
embedded resource as its text (a blob as a stand-in, see `jianmu_bt.mcp.resources`), a resource
link as a one-line reference. An image or audio block of a user message is kept as an
OpenAI-style content part (`image_url` / `input_audio`, as MCP tool results are); an assistant
message carries text only, so there it becomes a one-line stand-in.

A prompt's messages go into every turn of an LLM node that uses it, so their size is capped
(`max_chars`, 100,000 characters by default, media data included): a larger prompt raises
MCPContentTooLargeError rather than being cut, since half a prompt is a different prompt.
"""

from __future__ import annotations

from typing import Any

from jianmu_bt.mcp.errors import MCPContentTooLargeError
from jianmu_bt.mcp.resources import DEFAULT_MAX_CHARS, resource_text
from jianmu_bt.mcp.results import content_part, describe_content_block


def block_text(block: Any, limit: int | None = None) -> str:
    """The text of one prompt content block (media and links as one-line stand-ins); `limit`:
    only that many characters are wanted (an embedded blob is decoded no further)."""
    if getattr(block, "type", None) == "resource":
        return resource_text(getattr(block, "resource", None), limit)
    return describe_content_block(block)


def prompt_message(message: Any, limit: int | None = None) -> dict[str, Any]:
    """One MCP `PromptMessage` as an LLM message dict (`limit` as for `block_text`)."""
    role = str(message.role)
    block = message.content
    if role == "user" and getattr(block, "type", None) in ("image", "audio"):
        return {"role": role, "content": [content_part(block)]}
    return {"role": role, "content": block_text(block, limit)}


def _size(message: dict[str, Any]) -> int:
    content = message["content"]
    if isinstance(content, str):
        return len(content)
    part = content[0]  # a medium: its data (a data: URL or base64 audio) is what is sent
    return len(part.get("image_url", {}).get("url", "")) + len(
        part.get("input_audio", {}).get("data", "")
    )


def prompt_messages(
    result: Any, *, max_chars: int = DEFAULT_MAX_CHARS, what: str = "the MCP prompt"
) -> list[dict[str, Any]]:
    """The messages of a `GetPromptResult` as LLM message dicts, in order.

    MCPContentTooLargeError when they hold more than `max_chars` characters in all (text,
    embedded resources' text and media data); `what` names the prompt in that message."""
    messages: list[dict[str, Any]] = []
    size = 0
    for message in result.messages:
        converted = prompt_message(message, limit=max_chars - size + 1)
        size += _size(converted)
        if size > max_chars:
            raise MCPContentTooLargeError(
                f"{what} is larger than {max_chars} characters (after {len(messages) + 1} of "
                f"its {len(result.messages)} messages); a prompt goes into every turn of the "
                "LLM node that uses it, so it is refused rather than cut"
            )
        messages.append(converted)
    return messages


__all__ = ["block_text", "prompt_message", "prompt_messages"]

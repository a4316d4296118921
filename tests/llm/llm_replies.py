"""What the "model" answers, in the OpenAI Chat Completions and Anthropic Messages shapes.

The builders make whole replies and event streams; streams cut tool-call arguments into small
fragments (OpenAI's interleaved across parallel calls and keyed by `index`, Anthropic's as
`input_json_delta` pieces), the way real servers send them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any


def openai_completion(
    content: str | None = None,
    tool_calls: Sequence[tuple[str, dict[str, Any], str]] = (),
    *,
    model: str = "fake-model",
    usage: tuple[int, int] = (11, 7),
) -> dict[str, Any]:
    """A Chat Completions reply; `tool_calls` are (name, arguments, id)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for n, a, cid in tool_calls
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        },
    }


def pieces(text: str, size: int) -> list[str]:
    """`text` cut into `size`-character fragments."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def interleave(*lists: Iterable[Any]) -> list[Any]:
    """Items of the lists taken in turn (a0, b0, a1, b1, ...), so parallel calls overlap."""
    out: list[Any] = []
    iterators = [iter(items) for items in lists]
    while iterators:
        for iterator in list(iterators):
            try:
                out.append(next(iterator))
            except StopIteration:
                iterators.remove(iterator)
    return out


def openai_stream(
    text_pieces: Sequence[str] = (),
    tool_calls: Sequence[tuple[str, dict[str, Any], str]] = (),
    *,
    fragment: int = 4,
    model: str = "fake-model",
    usage: tuple[int, int] | None = (11, 7),
    done: bool = True,
) -> list[tuple[str | None, str]]:
    """Chat Completions stream chunks: text deltas, then the tool calls' argument fragments
    interleaved across calls and keyed by `index` (id and name only in each call's first)."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, str]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return None, json.dumps({"id": "c1", "model": model, "choices": [choice]})

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": piece}) for piece in text_pieces]
    per_call = []
    for index, (name, arguments, call_id) in enumerate(tool_calls):
        first = {"index": index, "id": call_id, "type": "function"}
        first["function"] = {"name": name, "arguments": ""}
        frags = [chunk({"tool_calls": [first]})]
        for piece in pieces(json.dumps(arguments), fragment):
            fragment_delta = {"index": index, "function": {"arguments": piece}}
            frags.append(chunk({"tool_calls": [fragment_delta]}))
        per_call.append(frags)
    events += interleave(*per_call)
    events.append(chunk({}, "tool_calls" if tool_calls else "stop"))
    if usage is not None:
        total = {"prompt_tokens": usage[0], "completion_tokens": usage[1]}
        total["total_tokens"] = sum(usage)
        events.append((None, json.dumps({"id": "c1", "choices": [], "usage": total})))
    if done:
        events.append((None, "[DONE]"))
    return events


def anthropic_message(
    text: str | None = None,
    tool_uses: Sequence[tuple[str, dict[str, Any], str]] = (),
    *,
    model: str = "claude-fake",
    usage: tuple[int, int] = (13, 5),
) -> dict[str, Any]:
    """A Messages API reply; `tool_uses` are (name, input, id)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "tool_use", "id": i, "name": n, "input": a} for n, a, i in tool_uses]
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if tool_uses else "end_turn",
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }


def anthropic_stream(
    text_pieces: Sequence[str] = (),
    tool_uses: Sequence[tuple[str, dict[str, Any], str]] = (),
    *,
    fragment: int = 4,
    model: str = "claude-fake",
    stop: bool = True,
) -> list[tuple[str | None, str]]:
    """Messages API stream events: a text block, then one tool_use block per call whose input
    comes as `input_json_delta` fragments (blocks are sequential, as the API sends them)."""

    def event(kind: str, **data: Any) -> tuple[str, str]:
        return kind, json.dumps({"type": kind, **data})

    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": model}
    message |= {"content": [], "usage": {"input_tokens": 13, "output_tokens": 1}}
    events = [event("message_start", message=message), event("ping")]
    index = 0
    if text_pieces:
        text_block = {"type": "text", "text": ""}
        events.append(event("content_block_start", index=0, content_block=text_block))
        for piece in text_pieces:
            events.append(
                event("content_block_delta", index=0, delta={"type": "text_delta", "text": piece})
            )
        events.append(event("content_block_stop", index=0))
        index = 1
    for name, arguments, call_id in tool_uses:
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        events.append(event("content_block_start", index=index, content_block=block))
        for piece in pieces(json.dumps(arguments), fragment):
            delta = {"type": "input_json_delta", "partial_json": piece}
            events.append(event("content_block_delta", index=index, delta=delta))
        events.append(event("content_block_stop", index=index))
        index += 1
    reason = "tool_use" if tool_uses else "end_turn"
    events.append(event("message_delta", delta={"stop_reason": reason}, usage={"output_tokens": 9}))
    if stop:
        events.append(event("message_stop"))
    return events

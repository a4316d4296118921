"""Reading a Messages API reply: its content blocks, whole or streamed, into one reply's parts.

A reply's `content` is a list of blocks: `text`, `thinking` (readable reasoning with a
`signature`), `redacted_thinking` (encrypted `data`), `tool_use` (a call for the client to run),
and server-tool blocks (`server_tool_use`, `web_search_tool_result`, ...) that Anthropic ran
itself. Only `tool_use` blocks become `ToolCall`s; the text of `thinking` blocks is the reply's
reasoning. A stream sends the same blocks in pieces (`content_block_start`, `*_delta`,
`content_block_stop`); `BlockAssembler` rebuilds them, so both paths keep the very blocks the
next request must send back (`anthropic_wire`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from jianmu_bt.llm.anthropic_wire import PLAIN_BLOCKS


def thinking_text(blocks: Sequence[Mapping[str, Any]]) -> str:
    """The readable reasoning of `blocks` (their `thinking` texts, joined)."""
    return "\n\n".join(
        str(b.get("thinking") or "") for b in blocks if b.get("type") == "thinking"
    ).strip()


def round_trip_data(origin: str, blocks: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The `provider_data` of a reply with `blocks`: None when its text and tool calls rebuild
    them exactly (plain `text` and `tool_use` blocks with nothing more, such as a `caller`)."""
    if all(set(block) <= PLAIN_BLOCKS.get(str(block.get("type")), set()) for block in blocks):
        return None
    return {"origin": origin, "content": [dict(block) for block in blocks]}


class BlockAssembler:
    """Rebuilds a streamed reply's content blocks from their start, delta and stop events."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}

    def start(self, index: int, block: Mapping[str, Any]) -> dict[str, Any]:
        """A `content_block_start`: the block as it starts (a copy, completed by the deltas)."""
        started = dict(block)
        self.blocks[index] = started
        if started.get("type") in ("tool_use", "server_tool_use"):
            self._json[index] = []
        return started

    def kind(self, index: int) -> str | None:
        """The type of the block at `index` (None before it started)."""
        block = self.blocks.get(index)
        return block.get("type") if block is not None else None

    def delta(self, index: int, delta: Mapping[str, Any]) -> None:
        """A `content_block_delta`: add its piece to the block it belongs to."""
        block = self.blocks.get(index)
        if block is None:
            return
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = str(block.get("text") or "") + str(delta.get("text") or "")
        elif kind == "thinking_delta":
            block["thinking"] = str(block.get("thinking") or "") + str(delta.get("thinking") or "")
        elif kind == "signature_delta":
            block["signature"] = str(block.get("signature") or "") + str(
                delta.get("signature") or ""
            )
        elif kind == "input_json_delta" and index in self._json:
            self._json[index].append(str(delta.get("partial_json") or ""))
        elif kind == "citations_delta":
            cited = block.get("citations") or []
            block["citations"] = [*cited, delta.get("citation")]

    def stop(self, index: int) -> None:
        """A `content_block_stop`: a call's input JSON is now whole."""
        pieces = self._json.pop(index, None)
        block = self.blocks.get(index)
        if pieces and block is not None:
            try:
                block["input"] = json.loads("".join(pieces))
            except ValueError:
                block["input"] = {"raw_arguments": "".join(pieces)}

    def content(self) -> list[dict[str, Any]]:
        """The blocks in their order, each closed (a block never stopped is closed here)."""
        for index in list(self._json):
            self.stop(index)
        return [self.blocks[index] for index in sorted(self.blocks)]

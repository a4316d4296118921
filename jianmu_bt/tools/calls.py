"""ToolCall and ToolResult: the typed request/response pair of one tool invocation.

An LLM provider produces `ToolCall`s (often with arguments as a JSON string); a tool's raw return
value, whatever its shape, becomes a `ToolResult` through `ToolResult.from_raw`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

ERROR_PREFIX = "Error:"


def new_call_id() -> str:
    """A fresh tool-call id in the `call_<hex>` form that OpenAI-compatible APIs use."""
    return f"call_{os.urandom(12).hex()}"


def _decode_arguments(raw: Any) -> Any:
    """Decode JSON-string arguments; keep anything undecodable as the original string."""
    if raw is None:
        return {}
    if isinstance(raw, (bytes, bytearray)):
        raw = raw.decode("utf-8", errors="replace")
    if isinstance(raw, str):
        text = raw.strip()
        if not text:
            return {}
        try:
            return json.loads(text)
        except ValueError:
            return raw
    return raw


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One requested tool invocation: a tool name, its arguments and a call id.

    The name is kept as the model wrote it (the tool's declared name, which goes back to the
    API as it is); tool sets and the guard look names up without regard to case.

    `arguments` is usually a dict; it stays a string when the LLM produced text that is not JSON,
    so the executor can answer with an error the LLM can correct instead of failing to parse.
    """

    name: str
    arguments: Any = field(default_factory=dict)
    id: str | None = None

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> ToolCall:
        """Build a ToolCall from a provider's dict, never raising on odd arguments.

        Accepts the flat shape `{"name", "arguments" | "args" | "input", "id"}` and the OpenAI shape
        `{"id", "type": "function", "function": {"name", "arguments"}}`. JSON-string arguments are
        decoded; undecodable text is kept as a string.
        """
        if isinstance(data, ToolCall):
            return data
        if not isinstance(data, Mapping):
            raise TypeError(f"a tool call must be a mapping, got {type(data).__name__}")
        function = data.get("function")
        source = function if isinstance(function, Mapping) else data
        name = source.get("name") or data.get("name") or ""
        if "arguments" in source:
            raw_args = source["arguments"]
        elif "args" in source:
            raw_args = source["args"]
        else:
            raw_args = source.get("input")
        call_id = data.get("id") or data.get("tool_call_id") or None
        return ToolCall(
            name=str(name).strip(),
            arguments=_decode_arguments(raw_args),
            id=str(call_id) if call_id else None,
        )

    @staticmethod
    def from_list(items: Iterable[Any] | None) -> list[ToolCall]:
        """Normalise a batch of calls; ToolCall items pass through, so this is idempotent."""
        if items is None:
            return []
        if isinstance(items, (ToolCall, Mapping)):
            items = [items]
        return [item if isinstance(item, ToolCall) else ToolCall.from_dict(item) for item in items]

    def with_id(self) -> ToolCall:
        """This call with an id, generating one when it has none."""
        return self if self.id else replace(self, id=new_call_id())

    @staticmethod
    def with_unique_ids(calls: Iterable[ToolCall]) -> list[ToolCall]:
        """The calls with ids that answer each one apart: a missing id or one already used
        earlier in the batch (some servers repeat ids) is replaced by a new one."""
        seen: set[str] = set()
        unique = []
        for call in calls:
            call_id = call.id
            if not call_id or call_id in seen:
                call_id = new_call_id()
                call = replace(call, id=call_id)
            seen.add(call_id)
            unique.append(call)
        return unique

    def to_dict(self) -> dict[str, Any]:
        """The flat JSON-ready form, which `from_dict` reads back."""
        return {"name": self.name, "arguments": self.arguments, "id": self.id}

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI Chat Completions `tool_calls` entry for this call."""
        arguments = self.arguments
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False, default=str)
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": arguments},
        }


# One encoder for every observation: json.dumps with options builds a new encoder per call.
_JSON = json.JSONEncoder(ensure_ascii=False, default=str)


def as_text(value: Any) -> str:
    """The text an LLM reads for a value: a string as it is, anything else as JSON (or str)."""
    if isinstance(value, str):
        return value
    try:
        return _JSON.encode(value)
    except (TypeError, ValueError):
        return str(value)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The normalised outcome of one tool call: which tool, whether it worked, output and error."""

    tool: str
    ok: bool
    output: Any = None
    error: str | None = None

    @staticmethod
    def from_raw(tool: str, raw: Any, error: str | None = None) -> ToolResult:
        """Normalise any raw tool return value into a ToolResult.

        - a ToolResult is returned as it is (its tool name filled in when empty);
        - an explicit `error` makes a failed result, keeping `raw` as the output;
        - a dict with an `ok` key is read as `{ok, output|result, error}`;
        - a string starting with "Error:" is a failure whose error is that string;
        - anything else is a successful output.
        """
        if isinstance(raw, ToolResult):
            return raw if raw.tool else replace(raw, tool=tool)
        if error is not None:
            return ToolResult(tool=tool, ok=False, output=raw, error=str(error))
        if isinstance(raw, Mapping) and "ok" in raw:
            ok = bool(raw["ok"])
            output = raw["output"] if "output" in raw else raw.get("result")
            err = raw.get("error")
            if not ok and not err:
                err = "the tool reported failure without a reason"
            return ToolResult(tool=tool, ok=ok, output=output, error=None if ok else str(err))
        if isinstance(raw, str) and raw.lstrip().startswith(ERROR_PREFIX):
            return ToolResult(tool=tool, ok=False, output=None, error=raw.strip())
        return ToolResult(tool=tool, ok=True, output=raw, error=None)

    @staticmethod
    def failure(tool: str, error: str) -> ToolResult:
        """A failed result with `error` as its reason."""
        return ToolResult(tool=tool, ok=False, output=None, error=error)

    @property
    def content(self) -> str:
        """The text an LLM reads as the observation of this call."""
        if self.ok:
            return as_text(self.output)
        error = self.error or "unknown error"
        return error if error.startswith(ERROR_PREFIX) else f"{ERROR_PREFIX} {error}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the four fields."""
        return {"tool": self.tool, "ok": self.ok, "output": self.output, "error": self.error}

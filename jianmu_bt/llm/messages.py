"""Conversation messages: plain JSON dicts in the OpenAI Chat shape, and their checks.

The four roles::

    {"role": "system",    "content": str}
    {"role": "user",      "content": str}
    {"role": "assistant", "content": str | None, "tool_calls": [ToolCall.to_openai(), ...]}
    {"role": "tool",      "content": str, "tool_call_id": str, "name": str}

An assistant message may also carry `refusal` (the model's words when it declined), `reasoning`
(its readable thinking) and `provider_data` (parts its provider needs back on the next turn, see
`jianmu_bt.llm.round_trip`).

They live in a tree's state as they are (JSON-ready), and every provider converts them to its
vendor's wire format. `normalize_messages` checks a conversation the way the vendors' APIs do
(every tool message answers an earlier tool call by id, every tool call is answered) and reports
the first problem by its position, before any request is sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set as AbstractSet
from typing import Any

from jianmu_bt.llm.errors import InvalidRequestError
from jianmu_bt.llm.round_trip import PROVIDER_DATA
from jianmu_bt.tools import ToolCall, ToolResult
from jianmu_bt.tools.calls import as_text

ROLES = ("system", "user", "assistant", "tool")

_ALLOWED_KEYS = {
    "system": {"role", "content", "name"},
    "user": {"role", "content", "name"},
    "assistant": {"role", "content", "tool_calls", "name", "refusal", "reasoning", "provider_data"},
    "tool": {"role", "content", "tool_call_id", "name"},
}


def system_message(content: str) -> dict[str, Any]:
    """A system message (instructions for the model)."""
    return {"role": "system", "content": content}


def user_message(content: str) -> dict[str, Any]:
    """A user message."""
    return {"role": "user", "content": content}


def assistant_message(
    content: str | None = None, tool_calls: Iterable[ToolCall | Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """An assistant message; each tool call gets an id of its own so results can answer it."""
    calls = ToolCall.with_unique_ids(ToolCall.from_list(list(tool_calls)))
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [call.to_openai() for call in calls]
    return message


def tool_message(tool_call_id: str, content: Any, name: str | None = None) -> dict[str, Any]:
    """A tool message answering the tool call `tool_call_id`.

    `content` may be a ToolResult (its `content`, "Error: ..." for failures), a string, or any
    JSON-ready value (serialised).
    """
    message: dict[str, Any] = {
        "role": "tool",
        "tool_call_id": tool_call_id,
        "content": _content_text(content),
    }
    if name is None and isinstance(content, ToolResult):
        name = content.tool
    if name:
        message["name"] = name
    return message


def tool_result_message(call: ToolCall, result: ToolResult) -> dict[str, Any]:
    """The tool message answering `call` with `result`."""
    if not call.id:
        raise InvalidRequestError(f"tool call {call.name!r} has no id to answer")
    return tool_message(call.id, result, name=call.name)


def _content_text(content: Any) -> str:
    return content.content if isinstance(content, ToolResult) else as_text(content)


def _check_content(where: str, content: Any, *, optional: bool) -> Any:
    if content is None:
        if optional:
            return None
        raise InvalidRequestError(f"{where}: 'content' is missing")
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, Mapping) and "type" in p for p in content):
        return [dict(part) for part in content]
    raise InvalidRequestError(
        f"{where}: 'content' must be a string or a list of content parts, "
        f"got {type(content).__name__}"
    )


def _normalize_tool_calls(where: str, raw: Any) -> list[dict[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, Sequence) or isinstance(raw, (str, bytes)):
        raise InvalidRequestError(f"{where}.tool_calls must be a list, got {type(raw).__name__}")
    calls = []
    for i, item in enumerate(raw):
        if not isinstance(item, (Mapping, ToolCall)):
            raise InvalidRequestError(
                f"{where}.tool_calls[{i}] must be a dict, got {type(item).__name__}"
            )
        call = item if isinstance(item, ToolCall) else ToolCall.from_dict(item)
        if not call.name:
            raise InvalidRequestError(f"{where}.tool_calls[{i}] has no function name")
        if not call.id:
            raise InvalidRequestError(
                f"{where}.tool_calls[{i}] ({call.name}) has no id; tool messages answer calls by id"
            )
        calls.append(call.to_openai())
    return calls


def normalize_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Checked copies of `messages` in the canonical shape above.

    Raises InvalidRequestError naming the first bad message (`messages[3] (tool): ...`): an
    unknown role or key, missing content, a tool call without id, a tool message whose
    `tool_call_id` answers no earlier call, or a tool call left unanswered by the next turn.
    """
    check_conversation(messages)
    return normalize_tail(messages, 0, frozenset(), set())


def check_conversation(messages: Any) -> None:
    """Raise InvalidRequestError unless `messages` is a non-empty list (not a string)."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidRequestError(
            f"messages must be a list of dicts, got {type(messages).__name__}"
        )
    if not messages:
        raise InvalidRequestError("messages is empty: a request needs at least one message")


def normalize_tail(
    messages: Sequence[Mapping[str, Any]],
    start: int,
    answered_before: AbstractSet[str],
    answered: set[str],
) -> list[dict[str, Any]]:
    """Checked copies of `messages[start:]`, as `normalize_messages` checks them.

    `messages[:start]` were checked before and left no tool call unanswered; `answered_before`
    holds the call ids they answered (only read). The ids this part answers are added to
    `answered`. Errors name positions in the whole of `messages`.
    """
    result: list[dict[str, Any]] = []
    pending: dict[str, tuple[int, str]] = {}  # unanswered call id -> (message index, tool name)
    for index in range(start, len(messages)):
        raw = messages[index]
        if not isinstance(raw, Mapping):
            raise InvalidRequestError(f"messages[{index}] must be a dict, got {type(raw).__name__}")
        role = raw.get("role")
        if role not in ROLES:
            raise InvalidRequestError(
                f"messages[{index}]: unknown role {role!r} (expected one of {', '.join(ROLES)})"
            )
        where = f"messages[{index}] ({role})"
        unknown = sorted(set(raw) - _ALLOWED_KEYS[role])
        if unknown:
            raise InvalidRequestError(
                f"{where}: unknown key(s) {', '.join(map(repr, unknown))} "
                f"(allowed: {', '.join(sorted(_ALLOWED_KEYS[role]))})"
            )
        if role != "tool" and pending:
            _raise_unanswered(pending, index)
        message: dict[str, Any] = {"role": role}
        if role == "assistant":
            calls = _normalize_tool_calls(where, raw.get("tool_calls"))
            message["content"] = _check_content(where, raw.get("content"), optional=True)
            if calls:
                message["tool_calls"] = calls
                for call in calls:
                    pending[call["id"]] = (index, call["function"]["name"])
            _copy_extras(where, raw, message)
        elif role == "tool":
            call_id = raw.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise InvalidRequestError(f"{where}: 'tool_call_id' is missing")
            if call_id not in pending:
                done = call_id in answered or call_id in answered_before
                state = "was already answered" if done else "answers no tool call"
                raise InvalidRequestError(
                    f"{where}: tool_call_id {call_id!r} {state} of the assistant message before it"
                )
            pending.pop(call_id)
            answered.add(call_id)
            message["tool_call_id"] = call_id
            message["content"] = _content_text(raw.get("content", ""))
        else:
            message["content"] = _check_content(where, raw.get("content"), optional=False)
        if raw.get("name"):
            message["name"] = str(raw["name"])
        result.append(message)
    if pending:
        _raise_unanswered(pending, None)
    return result


def _copy_extras(where: str, raw: Mapping[str, Any], message: dict[str, Any]) -> None:
    """Copy an assistant message's `refusal`, `reasoning` and `provider_data`, checked."""
    for key in ("refusal", "reasoning"):
        value = raw.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise InvalidRequestError(
                f"{where}: {key!r} must be a string, got {type(value).__name__}"
            )
        message[key] = value
    data = raw.get(PROVIDER_DATA)
    if data is None:
        return
    if not isinstance(data, Mapping) or not isinstance(data.get("origin"), str):
        raise InvalidRequestError(
            f"{where}: 'provider_data' must be a mapping with an 'origin' string (the parts a "
            "provider gave for this reply, see jianmu_bt.llm.round_trip)"
        )
    message[PROVIDER_DATA] = data


def _raise_unanswered(pending: Mapping[str, tuple[int, str]], before: int | None) -> None:
    call_id, (index, name) = next(iter(pending.items()))
    where = f"before messages[{before}]" if before is not None else "(the conversation ends)"
    raise InvalidRequestError(
        f"messages[{index}] (assistant): tool call {call_id!r} ({name}) has no tool message "
        f"answering it {where}"
    )

"""Substitutes: what answers a tool's calls in a test instead of the tool's own work.

An overlay puts a `SubstituteTool` where a tree had a tool. It keeps the original's name,
description, JSON Schema and effect tags (so the LLM is offered the same tool and the guard
counts and refuses it the same way) and still checks the arguments as the original would; only
the work is replaced, by one of:

| substitute            | answers                                                       |
|-----------------------|---------------------------------------------------------------|
| `Stub(result=...)`    | the same output every call                                    |
| `Stub(error="...")`   | the same failure every call                                   |
| `Recorded([...])`     | recorded calls in turn: an output or an error each (a replay) |
| `FunctionSubstitute`  | a Python function (sync or async) of the call's arguments     |

A `Recorded` entry may carry the `arguments` it was recorded with: a call is then answered by the
first unused entry with equal arguments, and a call that has none is a divergence, reported as a
failed call and kept in `divergences` (see `Overlay.divergences`).
"""

from __future__ import annotations

import inspect
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from jianmu_bt.tools import Tool, ToolResult
from jianmu_bt.tools.runners import ToolRunner

_ANY: Any = object()


def _error_text(message: str) -> str:
    """A failure's text as tools report them ("Error: ...")."""
    return message if message.startswith("Error") else f"Error: {message}"


def _short(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def comparable(value: Any) -> Any:
    """`value` as a trace file keeps it (JSON types; other values as text), to compare a live
    call's arguments with recorded ones."""
    return json.loads(json.dumps(value, default=str, sort_keys=True))


class Substitute(ABC):
    """What answers the calls of a substituted tool."""

    @abstractmethod
    async def answer(self, tool: str, arguments: Any) -> Any:
        """The output of one call of `tool` (a raw value or a ToolResult; raising fails it)."""

    def fresh(self) -> Substitute:
        """This substitute with none of its calls made, for one more overlay application (a
        stateless substitute returns itself; `Recorded` a new, unused copy)."""
        return self

    @property
    def divergences(self) -> list[str]:
        """Calls this substitute could not answer from its recording (none for most)."""
        return []

    def unused(self, tool: str) -> list[str]:
        """Recorded calls that were never made (none for most)."""
        return []


class Stub(Substitute):
    """The same answer to every call: `Stub(result=value)` or `Stub(error="message")`."""

    def __init__(self, result: Any = None, *, error: str | None = None) -> None:
        self.result = result
        self.error = error

    async def answer(self, tool: str, arguments: Any) -> Any:
        """The fixed output, or the fixed failure."""
        if self.error is not None:
            return ToolResult.failure(tool, _error_text(self.error))
        return self.result

    def __repr__(self) -> str:
        return f"Stub(error={self.error!r})" if self.error else f"Stub(result={self.result!r})"


@dataclass(frozen=True)
class RecordedCall:
    """One recorded call: its output (`result`) or its failure (`error`), and optionally the
    `arguments` it was made with (then only a call with equal arguments gets it)."""

    result: Any = None
    error: str | None = None
    arguments: Any = _ANY

    @property
    def has_arguments(self) -> bool:
        """Whether the entry is bound to the arguments it was recorded with."""
        return self.arguments is not _ANY


class Recorded(Substitute):
    """Answers calls from a recording, each entry once.

    Entries are `RecordedCall`s or mappings `{"result": ...}` / `{"error": ...}` with an optional
    `"arguments"`. A call takes the first unused entry whose arguments match (an entry without
    arguments matches any call), so calls made in a different order (a parallel batch) still
    get their own answers. A call with no entry left is a divergence: a failed call whose error
    says which call it was and what was recorded.
    """

    def __init__(self, calls: Iterable[RecordedCall | Mapping[str, Any]]) -> None:
        self.calls = [c if isinstance(c, RecordedCall) else _recorded(c) for c in calls]
        self._used = [False] * len(self.calls)
        self._made = 0
        self._divergences: list[str] = []

    async def answer(self, tool: str, arguments: Any) -> Any:
        """The answer of the first unused entry that matches `arguments`."""
        self._made += 1
        seen = comparable(arguments)
        for index, entry in enumerate(self.calls):
            if self._used[index]:
                continue
            if entry.has_arguments and comparable(entry.arguments) != seen:
                continue
            self._used[index] = True
            if entry.error is not None:
                return ToolResult.failure(tool, _error_text(entry.error))
            return entry.result
        message = self._diverged(tool, seen)
        self._divergences.append(message)
        return ToolResult.failure(tool, f"Error: {message}")

    def fresh(self) -> Recorded:
        """The same recording with no entry used and no divergence."""
        return Recorded(self.calls)

    def _diverged(self, tool: str, arguments: Any) -> str:
        call = f"call {self._made} of '{tool}' with arguments {_short(arguments)}"
        left = [e for e, used in zip(self.calls, self._used, strict=True) if not used]
        if not left:
            return (
                f"replay diverged: {call} is not in the recording "
                f"(all {len(self.calls)} recorded call(s) of '{tool}' were used)"
            )
        recorded = "; ".join(
            _short(e.arguments) if e.has_arguments else "(any arguments)" for e in left[:3]
        )
        return (
            f"replay diverged: {call} is not in the recording; the unused recorded call(s) of "
            f"'{tool}' have arguments: {recorded}"
        )

    @property
    def divergences(self) -> list[str]:
        """Every call that was not in the recording, as a message."""
        return list(self._divergences)

    def unused(self, tool: str) -> list[str]:
        """Recorded calls that no call took."""
        return [
            f"recorded call {index + 1} of '{tool}'"
            + (f" with arguments {_short(entry.arguments)}" if entry.has_arguments else "")
            + " was never made"
            for index, (entry, used) in enumerate(zip(self.calls, self._used, strict=True))
            if not used
        ]

    def __repr__(self) -> str:
        return f"Recorded({len(self.calls)} calls, {sum(self._used)} used)"


def _recorded(entry: Mapping[str, Any]) -> RecordedCall:
    unknown = set(entry) - {"result", "error", "arguments"}
    if unknown or ("result" in entry) == ("error" in entry):
        raise ValueError(
            "a recorded call is {result: ...} or {error: ...}, with optional arguments; "
            f"got keys {sorted(entry)}"
        )
    return RecordedCall(entry.get("result"), entry.get("error"), entry.get("arguments", _ANY))


class FunctionSubstitute(Substitute):
    """A Python function answers: called with the arguments as keywords (a mapping) or as one
    value; sync or async; what it returns is the output, what it raises a failure. A Tool given
    instead is called with the arguments (its result is the answer)."""

    def __init__(self, function: Callable[..., Any] | Tool) -> None:
        if not callable(function) and not isinstance(function, Tool):
            raise TypeError(f"a substitute function must be callable, got {function!r}")
        self.function = function

    async def answer(self, tool: str, arguments: Any) -> Any:
        """What the function returns for these arguments."""
        if isinstance(self.function, Tool):
            return await self.function.call(arguments)
        if isinstance(arguments, Mapping):
            value = self.function(**arguments)
        else:
            value = self.function(arguments)
        if inspect.isawaitable(value):
            value = await value
        return value

    def __repr__(self) -> str:
        return f"FunctionSubstitute({getattr(self.function, '__qualname__', self.function)!r})"


def as_substitute(value: Any) -> Substitute:
    """A Substitute from what a Python overlay names: a Substitute, a Tool or a function."""
    if isinstance(value, Substitute):
        return value
    if isinstance(value, Tool) or callable(value):
        return FunctionSubstitute(value)
    raise TypeError(
        f"a tool substitute is a Stub, Recorded, a function or a Tool, got {type(value).__name__}"
        " (for a fixed result write Stub(result=...))"
    )


class SubstituteTool(Tool):
    """A tool that looks like `original` (name, description, schemas, effect tags) and checks
    arguments like it, but whose work is the `substitute`'s."""

    blocking = False

    def __init__(self, original: Tool, substitute: Substitute) -> None:
        self.original: Tool = (
            original.original if isinstance(original, SubstituteTool) else original
        )
        self.substitute = substitute
        for attribute in (
            "name",
            "description",
            "input_schema",
            "output_schema",
            "parallel_safe",
            "effect_tags",
            "idempotent",
            "read_only",
            "timeout",
        ):
            setattr(self, attribute, getattr(self.original, attribute))

    def get_description(self) -> str:
        """The original's description, as the LLM saw it."""
        return self.original.get_description()

    def _prepare_input(self, args: Any) -> Any:
        """Arguments the original would refuse are refused the same way (its own error); the
        others go to the substitute as the call gave them."""
        checked = self.original._prepare_input(args)
        return checked if isinstance(checked, ToolResult) else args

    async def run(self, input: Any) -> Any:
        """The substitute's answer to this call."""
        return await self.substitute.answer(self.name, input)

    async def _dispatch(self, merged: Any, runner: ToolRunner | None) -> Any:
        """Always here, never through a runner: a sandbox's or Ray's worker rebuilds a tool by
        its import path and cannot rebuild a substitute (nor share its recorded state)."""
        return await self.execute_local(merged)

    def __repr__(self) -> str:
        return f"<SubstituteTool {self.name!r}: {self.substitute!r}>"


__all__ = [
    "FunctionSubstitute",
    "Recorded",
    "RecordedCall",
    "Stub",
    "Substitute",
    "SubstituteTool",
    "as_substitute",
    "comparable",
]

"""Record and replay: a run's trace turned into an overlay that answers every call as it was.

```python
data = record_overlay(Trace.from_file("run.jsonl"))    # or: jianmu overlay record run.jsonl
write_overlay(data, "run.overlay.yaml")
```
Each LLM reply becomes a scripted reply (in order) and each tool call a recorded call of its tool
with its arguments and its outcome; every failed attempt of a retried call is kept, so the
replay retries the same way. Calls the guard refused never ran and are not recorded: the guard
refuses them again in the replay. Outputs are what the trace file holds (JSON; other values
as their text). A replayed run that makes a call the recording does not have fails it, and the
run (see `Overlay.divergences`), with a message naming the call and what was recorded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from jianmu_bt.testing.trace import Trace

_HEADER = """\
# An overlay recorded from a run's trace ({source}): every LLM reply and tool result of that
# run, replayed offline. Use it with `jianmu run TREE --overlay THIS` or in pytest
# (the jianmu_run fixture); a call the recording does not have fails the replay.
"""


@dataclass
class _Entry:
    """One started call: its arguments and the outcome of each attempt."""

    arguments: Any
    attempts: list[dict[str, Any]] = field(default_factory=list)


def _reply(event: Mapping[str, Any]) -> str | dict[str, Any]:
    calls = [
        {k: v for k, v in call.items() if k in ("id", "name", "arguments")}
        for call in event.get("tool_calls") or []
        if isinstance(call, Mapping)
    ]
    text = event.get("text") or ""
    if not calls and not event.get("usage") and event.get("finish_reason") in (None, "stop"):
        return str(text)
    reply: dict[str, Any] = {"content": text}
    if calls:
        reply["tool_calls"] = calls
    if isinstance(event.get("usage"), Mapping) and any(event["usage"].values()):
        reply["usage"] = dict(event["usage"])
    if event.get("finish_reason"):
        reply["finish_reason"] = event["finish_reason"]
    return reply


def record_overlay(trace: Trace | Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The data of an overlay file that replays the run of `trace` (see the module docstring)."""
    events = trace.events if isinstance(trace, Trace) else [dict(e) for e in trace]
    tools: dict[str, list[_Entry]] = {}
    replies: list[str | dict[str, Any]] = []
    open_calls: dict[Any, _Entry] = {}
    for event in events:
        kind = event.get("type")
        if kind == "llm.response":
            replies.append(_reply(event))
        elif kind == "tool.call.started":
            entry = _Entry(event.get("arguments"))
            open_calls[event.get("call_id")] = entry
            tools.setdefault(str(event.get("tool")), []).append(entry)
        elif kind == "tool.call.retry" and event.get("call_id") in open_calls:
            open_calls[event.get("call_id")].attempts.append({"error": event.get("error")})
        elif kind in ("tool.call.completed", "tool.call.failed"):
            ended = open_calls.pop(event.get("call_id"), None)
            if ended is None:  # refused by the guard: never started
                continue
            outcome = (
                {"result": event.get("output")}
                if kind == "tool.call.completed"
                else {"error": str(event.get("error") or "the tool failed")}
            )
            ended.attempts.append(outcome)
    data: dict[str, Any] = {"version": 1}
    if replies:
        data["llm"] = {"replies": replies}
    recorded: dict[str, Any] = {}
    for name, entries in tools.items():
        calls = [
            {"arguments": entry.arguments, **attempt}
            for entry in entries
            for attempt in entry.attempts  # a call still running at the end has none
        ]
        if calls:
            recorded[name] = {"calls": calls}
    if recorded:
        data["tools"] = recorded
    return data


def dump_overlay(data: Mapping[str, Any], source: str = "a trace") -> str:
    """The YAML text of overlay `data`, with a header saying where it came from."""
    body = yaml.safe_dump(dict(data), sort_keys=False, allow_unicode=True, width=100)
    return _HEADER.format(source=source) + body


def write_overlay(data: Mapping[str, Any], path: str | Path, source: str = "a trace") -> Path:
    """Write overlay `data` as a YAML file; returns its path."""
    target = Path(path)
    target.write_text(dump_overlay(data, source), encoding="utf-8")
    return target


__all__ = ["dump_overlay", "record_overlay", "write_overlay"]

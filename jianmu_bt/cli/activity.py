"""What happened during a run, in words: tool calls, guard decisions and LLM replies.

`describe_event` turns one run event into a line for a person; `ActivityLog` subscribes to a
run's events, keeps those lines and counts the outcomes for the final summary.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from jianmu_bt.cli.desks import terminal_text

#: Longest value shown in one activity line.
VALUE_CHARS = 80


def short_value(value: Any, limit: int = VALUE_CHARS) -> str:
    """A value on one line (strings as they are, the rest as JSON), control characters shown as
    escapes (`terminal_text`), cut to `limit` chars."""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=str)
        except ValueError:
            text = repr(value)
    return terminal_text(" ".join(text.split()), limit)


def progress_text(data: dict[str, Any]) -> str:
    """`3/10 (30%): message` for a `tool.progress` event's data (`3` when the total is unknown)."""
    done, total, message = data.get("progress"), data.get("total"), data.get("message")
    text = f"{done:g}" if isinstance(done, int | float) else str(done)
    if isinstance(total, int | float) and isinstance(done, int | float) and total > 0:
        text += f"/{total:g} ({100 * done / total:.0f}%)"
    return f"{text}: {short_value(message)}" if message else text


def describe_event(event: Any) -> str | None:
    """One line for a tool, guard or LLM event; None for events a person need not see."""
    data, who = event.data, event.node or "?"
    tool = data.get("tool", "?")
    if event.type == "tool.call.completed":
        return f"{who}: {tool} -> {short_value(data.get('output'))}"
    if event.type == "tool.call.failed":
        return f"{who}: {tool} failed: {short_value(data.get('error'))}"
    if event.type == "tool.progress":
        return f"{who}: {tool} {progress_text(data)}"
    if event.type == "tool.call.retry":
        return f"{who}: retrying {tool} (attempt {data.get('attempt')})"
    if event.type == "guard.decision":
        reason = short_value(data.get("reason") or "")
        return f"{who}: guard says {data.get('decision')} to {tool}: {reason}"
    if event.type == "mcp.sampling":  # an MCP server asked the tree's LLM (mcp/sampling.py)
        why = f": {short_value(data.get('reason'))}" if data.get("reason") else ""
        return f"{data.get('server', '?')}: sampling {data.get('outcome')}{why}"
    if event.type == "input.requested":  # an MCP server asks the user (mcp/elicitation.py)
        return f"{data.get('server', '?')} asks: {short_value(data.get('message'))}"
    if event.type in ("input.answered", "input.refused"):
        outcome = data.get("action") or "refused"
        why = f": {short_value(data.get('reason'))}" if data.get("reason") else ""
        return f"{data.get('server', '?')}: question {outcome}{why}"
    if event.type == "llm.response":
        calls = [c.get("name", "?") for c in data.get("tool_calls") or [] if isinstance(c, dict)]
        if calls:
            return f"{who}: LLM asks for {', '.join(calls)}"
        return f"{who}: LLM answers: {short_value(data.get('text') or '')}"
    return None


class ActivityLog:
    """A run-event subscriber: the activity lines in order, and counts per outcome.

    A call the guard refused is told once, by its guard line: the nodes also report it as a
    failed call (the same call id), which is neither counted nor shown again.
    """

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.counts: Counter[str] = Counter()
        self._refused: set[str] = set()

    def __call__(self, event: Any) -> None:
        call_id = event.data.get("call_id")
        if event.type == "guard.decision":
            self.counts[f"guard.{event.data.get('decision')}"] += 1
            if event.data.get("decision") in ("deny", "confirm") and call_id:
                self._refused.add(call_id)
        elif event.type == "tool.call.failed" and call_id in self._refused:
            return  # the refusal, already told by its guard line
        elif event.type == "tool.progress":
            return  # live news (`--watch`, the trace), not part of the summary
        elif event.type in ("tool.call.completed", "tool.call.failed", "llm.response"):
            self.counts[event.type] += 1
        line = describe_event(event)
        if line is not None:
            self.lines.append(line)

    def totals(self) -> str:
        """A one-line count: tool calls ok/failed, guard refusals, LLM replies."""
        counts = self.counts
        refused = counts["guard.deny"] + counts["guard.confirm"]
        parts = [
            f"{counts['tool.call.completed']} tool call(s) ok",
            f"{counts['tool.call.failed']} failed",
        ]
        if refused:
            parts.append(f"{refused} refused by the guard")
        if counts["llm.response"]:
            parts.append(
                f"{counts['llm.response']} LLM repl{'y' if counts['llm.response'] == 1 else 'ies'}"
            )
        return ", ".join(parts)

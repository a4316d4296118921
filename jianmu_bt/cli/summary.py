"""The end of `jianmu run`: how the run ended, what it did, and which state keys changed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jianmu_bt.cli.activity import ActivityLog, short_value

#: Activity lines shown in a summary; the rest are counted.
SUMMARY_ACTIVITY = 20
#: Longest state value shown in a summary (text values get more room: they are the results).
STATE_VALUE_CHARS = 100
STATE_TEXT_CHARS = 240


def state_snapshot(state: Any) -> dict[str, Any]:
    """The state as JSON-ready data (falls back to plain values when a field cannot dump)."""
    try:
        return state.snapshot()
    except Exception:  # a custom field type without a JSON form still gets compared by value
        return dict(state.get())


def changed_keys(
    before: Mapping[str, Any], after: Mapping[str, Any], written: Iterable[str] = ()
) -> list[str]:
    """Keys whose value differs between two snapshots (written keys first, in write order)."""
    order = list(dict.fromkeys([*written, *after]))
    return [key for key in order if key in after and before.get(key) != after.get(key)]


def describe_state_value(key: str, value: Any) -> str:
    """A state value for a summary line: lists as their length and last item."""
    if key == "guard" and isinstance(value, Mapping):
        return "(the guard's counters and approvals, kept for pause and resume)"
    if isinstance(value, list) and value:
        last = value[-1]
        if isinstance(last, Mapping) and "content" in last:
            last = f"{last.get('role', '?')}: {last.get('content')}"
        return f"{len(value)} item(s), last: {short_value(last, STATE_VALUE_CHARS - 30)}"
    if isinstance(value, str):
        return short_value(value, STATE_TEXT_CHARS)
    return short_value(value, STATE_VALUE_CHARS)


def usage_line(usage: Mapping[str, Any]) -> str:
    """A run's LLM usage in one line: requests, tokens in and out, tool calls, cost."""
    parts = [
        f"{usage.get('requests', 0)} LLM request(s)",
        f"{usage.get('input_tokens', 0):,} input / {usage.get('output_tokens', 0):,} output tokens",
        f"{usage.get('tool_calls', 0)} tool call(s) asked",
    ]
    cost = usage.get("cost")
    parts.append(f"${cost:.4f}" if isinstance(cost, (int, float)) else "cost unknown (no price)")
    return ", ".join(parts)


def summary_lines(
    tree_name: str,
    result: Any,
    activity: ActivityLog,
    changes: Mapping[str, Any],
    *,
    show_activity: bool = True,
    scripted_model: bool = False,
) -> list[str]:
    """The summary: status, reason, ticks, duration, activity, changed state keys.

    `scripted_model`: the tree's LLM plays replies written in the file, which the summary says,
    since they do not answer whatever input the run was given."""
    ended = "paused" if result.paused else f"finished: {result.run_status}"
    lines = [
        f"Run of '{tree_name}' {ended}" + (f" (run {result.run_id})" if result.run_id else ""),
        f"  reason:   {'-' if result.ok else result.reason or 'not given'}",
        f"  ticks:    {result.ticks}",
        f"  duration: {result.duration:.3f}s",
        f"  activity: {activity.totals()}",
    ]
    usage = result.state.get("usage") if isinstance(result.state, Mapping) else None
    if isinstance(usage, Mapping) and usage.get("requests"):
        lines.append(f"  usage:    {usage_line(usage)}")
    if scripted_model:
        lines.append("  model:    scripted (replies written in the tree file, not a real model)")
    if show_activity and activity.lines:
        lines.append("Activity:")
        lines.extend(f"  {line}" for line in activity.lines[:SUMMARY_ACTIVITY])
        if len(activity.lines) > SUMMARY_ACTIVITY:
            lines.append(f"  ... and {len(activity.lines) - SUMMARY_ACTIVITY} more")
    if changes:
        lines.append("State changes:")
        lines.extend(f"  {key} = {describe_state_value(key, v)}" for key, v in changes.items())
    else:
        lines.append("State changes: none")
    return lines

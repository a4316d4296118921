"""The end of `jianmu run`: how the run ended, what it did, and which state keys changed.

The heading names the run's id only when the run was recorded (`jianmu runs show` knows it);
the reason line is there only when there is a reason; the built-in state fields (`messages`,
`usage`, `guard`, ... : `builtin_fields`) are not listed as changes (the usage has its own line).
"""

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


def builtin_fields(tree: Any) -> frozenset[str]:
    """The tree's built-in state fields (the AgentState ones the nodes keep: `messages`,
    `usage`, `guard`, ...), as the state model marks them; a Python tree's when its state
    schema is an AgentState."""
    info = getattr(tree, "state_info", None)
    if info is not None:
        return frozenset(name for name, facts in info.fields.items() if facts.builtin)
    from jianmu_bt.runtime.state_schema import AgentState

    schema = getattr(getattr(tree, "state", None), "schema", None)
    if isinstance(schema, type) and issubclass(schema, AgentState):
        return frozenset(AgentState.model_fields)
    return frozenset()


def changed_keys(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    written: Iterable[str] = (),
    hidden: Iterable[str] = (),
) -> list[str]:
    """Keys whose value differs between two snapshots (written keys first, in write order),
    the `hidden` ones left out."""
    skip = set(hidden)
    order = list(dict.fromkeys([*written, *after]))
    return [
        key
        for key in order
        if key in after and key not in skip and before.get(key) != after.get(key)
    ]


def describe_state_value(key: str, value: Any) -> str:
    """A state value for a summary line: lists as their length and last item."""
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


def run_label(run_id: str | None, recorded: bool) -> str:
    """` (run ID)` for a recorded run, ` (not recorded)` for one no store has."""
    if not recorded:
        return " (not recorded)"
    return f" (run {run_id})" if run_id else ""


def summary_lines(
    tree_name: str,
    result: Any,
    activity: ActivityLog,
    changes: Mapping[str, Any],
    *,
    show_activity: bool = True,
    model: str | None = None,
    recorded: bool = True,
) -> list[str]:
    """The summary: status, reason (when there is one), ticks, duration, activity, changed
    state keys.

    `model`: what answered as the LLM when it was not a real model (replies written in the tree
    file or an overlay file), which the summary says, since they do not answer whatever input
    the run was given. `recorded`: the run is in a run store; else the heading says "(not
    recorded)" instead of an id no command could look up."""
    ended = "paused" if result.paused else f"finished: {result.run_status}"
    lines = [f"Run of '{tree_name}' {ended}{run_label(result.run_id, recorded)}"]
    reason = result.reason or ("" if result.ok else "not given")
    if reason:
        lines.append(f"  reason:   {reason}")
    lines += [
        f"  ticks:    {result.ticks}",
        f"  duration: {result.duration:.3f}s",
        f"  activity: {activity.totals()}",
    ]
    usage = result.state.get("usage") if isinstance(result.state, Mapping) else None
    if isinstance(usage, Mapping) and usage.get("requests"):
        lines.append(f"  usage:    {usage_line(usage)}")
    if model:
        lines.append(f"  model:    {model}")
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

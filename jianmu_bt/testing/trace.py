"""Trace: a run's events, with small questions and assertions for tests.

```python
trace = Trace()
tree.events.subscribe(trace)             # or Trace.from_file("run.jsonl") (`jianmu run --trace`)
tree.run()
trace.nodes_ran()                        # ["Main", "Fetch", "Summarise", ...] in order
trace.calls("http_request")[0].arguments # {"url": "..."}
trace.assert_order("Fetch", "Summarise") # AssertionError showing the real order otherwise
```
The events are kept as a trace file holds them (`Event.to_dict()`), so a live run and a trace
file answer the same questions. Nodes are named as in the tree file (their `name`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jianmu_bt.runtime.events import Event
from jianmu_bt.viz.trace_status import TREE_NODES_EVENT, load_trace


@dataclass(frozen=True)
class Call:
    """One tool call of a run: which tool, from which node, with what, and how it ended.

    `ok` is None for a call that had not ended when the trace stopped; `attempts` counts retries.
    """

    tool: str
    node: str | None
    call_id: str | None
    arguments: Any
    ok: bool | None
    output: Any = None
    error: str | None = None
    attempts: int = 1


class Trace:
    """The events of one run (a subscriber of `tree.events`, or read from a trace file)."""

    def __init__(self, events: Iterable[Mapping[str, Any]] = ()) -> None:
        self.events: list[dict[str, Any]] = [dict(e) for e in events]

    def __call__(self, event: Event) -> None:
        """Keep one live event (as a trace file line)."""
        self.events.append(event.to_dict())

    @classmethod
    def from_file(cls, path: str | Path) -> Trace:
        """The trace a `jianmu run --trace FILE` wrote."""
        return cls(load_trace(path))

    def of_type(self, type: str) -> list[dict[str, Any]]:
        """The events of one type (`tool.call.started`, `llm.response`, `guard.decision`, ...)."""
        return [e for e in self.events if e.get("type") == type]

    def calls(self, tool: str | None = None) -> list[Call]:
        """The tool calls that started, in order (only `tool`'s when given); a call the guard
        refused never started, see `refused`."""
        ended: dict[Any, dict[str, Any]] = {}
        for event in self.events:
            if event.get("type") in ("tool.call.completed", "tool.call.failed"):
                ended.setdefault(event.get("call_id"), event)
        found = []
        for event in self.of_type("tool.call.started"):
            if tool is not None and str(event.get("tool", "")).lower() != tool.lower():
                continue
            end = ended.get(event.get("call_id"))
            ok = None if end is None else end["type"] == "tool.call.completed"
            found.append(
                Call(
                    tool=str(event.get("tool")),
                    node=event.get("node"),
                    call_id=event.get("call_id"),
                    arguments=event.get("arguments"),
                    ok=ok,
                    output=(end or {}).get("output"),
                    error=(end or {}).get("error"),
                    attempts=int((end or {}).get("attempts") or 1),
                )
            )
        return found

    def refused(self) -> list[dict[str, Any]]:
        """The guard's refusals and holds (`guard.decision` events)."""
        return self.of_type("guard.decision")

    def llm_replies(self) -> list[dict[str, Any]]:
        """Every LLM reply (`text`, `tool_calls`, `usage`, `finish_reason`), in order."""
        return self.of_type("llm.response")

    def nodes_ran(self) -> list[str]:
        """The names of the nodes that ran, each once, in the order they first started.

        Nodes that started in the same tick are in tree order (a parent before its children),
        which a trace knows from its `tree.nodes` event (`run_tree` and `jianmu run --trace`
        write one); without it they stay in the order their events came.
        """
        order = self._layout()
        seen: dict[str, None] = {}
        tick: list[tuple[int, int, str]] = []

        def flush() -> None:
            for _, _, name in sorted(tick):
                seen.setdefault(name, None)
            tick.clear()

        for event in self.events:
            kind = event.get("type")
            if kind == "tree.tick":
                flush()
            elif kind == "node.status" and event.get("old") == "INVALID" != event.get("new"):
                position = order.get(str(event.get("id")), len(order))
                tick.append((position, len(tick), str(event.get("node"))))
        flush()
        return list(seen)

    def _layout(self) -> dict[str, int]:
        """Each node's pre-order index by its id, from the last `tree.nodes` event."""
        layouts = self.of_type(TREE_NODES_EVENT)
        nodes = layouts[-1].get("nodes") if layouts else None
        if not isinstance(nodes, list):
            return {}
        return {str(n.get("id")): i for i, n in enumerate(nodes) if isinstance(n, Mapping)}

    def statuses(self) -> dict[str, str]:
        """Each node's last status by name (SUCCESS, FAILURE, RUNNING, INVALID)."""
        return {str(e.get("node")): str(e.get("new")) for e in self.of_type("node.status")}

    def finished(self) -> dict[str, Any] | None:
        """The `tree.finished` event (`status`, `ticks`, `reason`), or None."""
        found = self.of_type("tree.finished")
        return found[-1] if found else None

    def assert_order(self, *names: str) -> None:
        """AssertionError unless each node in `names` ran, and they first ran in this order."""
        ran = self.nodes_ran()
        missing = [name for name in names if name not in ran]
        if missing:
            raise AssertionError(
                f"node(s) {', '.join(map(repr, missing))} did not run; nodes that ran: {ran}"
            )
        positions = [ran.index(name) for name in names]
        if positions != sorted(positions):
            shown = [name for name in ran if name in names]
            raise AssertionError(f"expected the order {list(names)}, the nodes ran as {shown}")

    def assert_not_ran(self, *names: str) -> None:
        """AssertionError if any node in `names` ran."""
        ran = [name for name in names if name in self.nodes_ran()]
        if ran:
            raise AssertionError(f"node(s) {', '.join(map(repr, ran))} ran, but should not have")

    def __len__(self) -> int:
        return len(self.events)

    def __repr__(self) -> str:
        return f"Trace({len(self.events)} events, {len(self.calls())} tool calls)"


__all__ = ["Call", "Trace"]

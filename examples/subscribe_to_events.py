"""Subscribe to a YAML tree's events: node status changes, tool calls, guard decisions, LLM turns.

Every subscriber is a plain callable that gets `Event(type, node, data, time)`; the same events
feed `jianmu run --watch` and `--trace`.

Run: python examples/subscribe_to_events.py
"""

from collections import Counter
from pathlib import Path

from jianmu_bt.loader import load_tree
from jianmu_bt.runtime import Event

TREE = Path(__file__).resolve().parent.parent / "trees" / "quickstart.yaml"


def main() -> None:
    counts: Counter[str] = Counter()

    def on_event(event: Event) -> None:
        counts[event.type] += 1
        data = event.data
        if event.type == "node.status":
            print(f"  {event.node}: {data['old']} -> {data['new']}")
        elif event.type.startswith("tool.call."):
            outcome = data.get("output", data.get("error", data.get("arguments")))
            print(f"{event.type:20} {data['tool']}: {outcome}")
        elif event.type == "guard.decision":
            print(f"{event.type:20} {data['decision']} {data['tool']}: {data['reason']}")
        elif event.type == "llm.response":
            asked = [call["name"] for call in data["tool_calls"]]
            print(f"{event.type:20} " + (f"asks for {asked}" if asked else data["text"]))

    with load_tree(TREE) as tree:
        unsubscribe = tree.events.subscribe(on_event)
        result = tree.run(timeout=30)
        unsubscribe()
    print(f"finished: {result.status.value}; events seen: {dict(sorted(counts.items()))}")


if __name__ == "__main__":
    main()

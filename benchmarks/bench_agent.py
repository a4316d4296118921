"""A scripted agent loop over many turns: time (and its growth with the turns) and peak memory.

The loop is `react_agent` with a `ScriptedProvider` whose replies ask for one call of a plain sync
`@tool` per turn, then answer; it runs through `TreeRunner.run()` with the default settings, as
a user's script would. Each turn adds an assistant message and a tool message, so the history
the provider is given grows by two messages a turn.

- time: 100, 250 and 500 turns, interleaved. Targets: 500 turns in at most 0.15 s, and linear:
  the time per turn at 500 turns within 1.5x of the time per turn at 100 turns.
- memory: the tracemalloc peak of a 100-turn run and of a 450-turn run. Target: the peak per
  turn at 450 turns within 1.5x of the peak per turn at 100 turns (O(n), not O(n^2)).
- a `(tuned: ...)` row lifts the ticks-per-second cap, which a user would have to choose.

Run: python benchmarks/bench_agent.py [--quick]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import Section, Settings, Traced, info, interleave, limit, within
from benchmarks.suite import main
from jianmu_bt import tool
from jianmu_bt.llm import ScriptedProvider
from jianmu_bt.nodes import react_agent
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner

TURNS = (100, 250, 500)
MEMORY_TURNS = (100, 450)
UNCAPPED = {"max_ticks_per_second": 1e9}


@tool
def lookup(x: int) -> str:
    """Look x up (a plain sync function)."""
    return f"item {x}"


def agent_runner(turns: int, **runner_options: Any) -> TreeRunner:
    """A runner of an agent whose scripted LLM calls `lookup` `turns` times, then answers."""
    replies: list[Any] = [
        {"tool_calls": [{"name": "lookup", "arguments": {"x": i}}]} for i in range(turns)
    ]
    replies.append("done")
    root = react_agent(
        "Agent",
        tools=[lookup],
        provider=ScriptedProvider(replies),
        goal="Look up every item.",
        max_iterations=turns + 1,
    )
    return TreeRunner(root, StateManager(AgentState), **runner_options)


def check(runner: TreeRunner, turns: int) -> None:
    """The run answered after `turns` tool turns (goal, 2 messages a turn, the answer)."""
    result = runner.run()
    assert result.ok, result.reason
    assert len(result.state["messages"]) == 2 * turns + 2, len(result.state["messages"])


def timed(turns: int, **runner_options: Any) -> Any:
    """A sampler: seconds of one `run()` of a fresh agent of `turns` turns."""

    def sample() -> float:
        runner = agent_runner(turns, **runner_options)
        start = time.perf_counter()
        check(runner, turns)
        return time.perf_counter() - start

    return sample


def peak(turns: int) -> int:
    """The most bytes allocated at once during a `turns`-turn run (tracemalloc)."""
    runner = agent_runner(turns)
    with Traced() as memory:
        check(runner, turns)
        return memory.peak()


def agent(settings: Settings) -> Section:
    """Agent loops of 100/250/500 turns, linearity, and peak memory at 100 and 450 turns."""
    samplers = {str(turns): timed(turns) for turns in TURNS}
    samplers["tuned"] = timed(TURNS[-1], **UNCAPPED)
    t = interleave(samplers, settings.pick(5, 2), warmup=1)
    per_turn = {turns: [x / turns for x in t[str(turns)]] for turns in TURNS}
    low, high = MEMORY_TURNS
    peaks = {turns: [peak(turns) / turns] for turns in MEMORY_TURNS}
    last = TURNS[-1]
    return Section(
        "Scripted agent loop, TreeRunner.run() with the default settings",
        [
            limit(f"{last}-turn agent loop: run()", t[str(last)], 0.15, headline="agent500"),
            *(limit(f"  {turns} turns", t[str(turns)], None) for turns in TURNS[:-1]),
            within(
                f"time per turn, {last} turns vs {TURNS[0]} turns",
                per_turn[last],
                per_turn[TURNS[0]],
                f"the same loop, {TURNS[0]} turns",
                1.5,
                "1x is linear; the history grows by two messages a turn",
                headline="agent_linear",
            ),
            limit(f"  (tuned: max_ticks_per_second=1e9) {last} turns", t["tuned"], None),
            within(
                f"peak memory per turn, {high} turns vs {low} turns",
                peaks[high],
                peaks[low],
                f"the same loop, {low} turns",
                1.5,
                "tracemalloc peak of a whole run / turns: 1x is O(n) memory, O(n^2) grows "
                "with the turns",
                unit="bytes",
                headline="history_memory",
            ),
            info(f"  peak memory of the {high}-turn run", peaks[high][0] * high, "bytes"),
        ],
    )


AREAS = {"agent": agent}

if __name__ == "__main__":
    sys.exit(main(AREAS))

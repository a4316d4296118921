"""The cost of durable runs: a 10-step workflow of 1 ms tool calls with and without a run store.

The workflow: a YAML tree, a `sequence` of 10 `tool` steps, each calling a sync `@tool` that
sleeps 1 ms and writes a small value to state. The tree is loaded once and run many times; each
`tree.run(...)` is a fresh run (new run id, fresh state).

- durable vs no store: `tree.run(store=SQLiteStore(...))` (a `running` and a `done` journal row
  and a checkpoint per tool call; WAL, synchronous=NORMAL; one file reused across runs, as an app
  would) next to `tree.run()`. Target: the durable run takes at most 1.3x the run without a store.
- vs LangGraph: a `StateGraph` of the same 10 steps in a chain, each node calling the same
  function and writing to state, compiled with `SqliteSaver` on a file in the same folder and
  invoked with a new `thread_id` per run, with LangGraph's defaults (`durability="async"`,
  synchronous=FULL). Target: ours at least 2x faster.
- context: the same LangGraph graph with `durability="sync"` and synchronous=NORMAL (each
  checkpoint committed before the next step, at our SQLite setting), the journal's cost per tool
  call, (durable - no store) / 10, and the floor (the 10 calls of the function made directly).

Run: python benchmarks/bench_durability.py [--quick]
"""

from __future__ import annotations

import importlib.util
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import (
    BENCH_EXTRA,
    Section,
    Settings,
    faster,
    info,
    interleave,
    optional,
    per_call,
    within,
)
from benchmarks.suite import main
from jianmu_bt import tool
from jianmu_bt.loader import Tree, load_tree
from jianmu_bt.store import SQLiteStore

STEPS = 10
NAP = 0.001
DURABLE_LIMIT = 1.3  # a durable run may take at most this many times a run without a store
LANGGRAPH_FACTOR = 2  # ours at least this many times faster than LangGraph + SqliteSaver


def work(n: int) -> str:
    """Sleep 1 ms, then return a small value."""
    time.sleep(NAP)
    return f"v{n}"


def tree_yaml(steps: int = STEPS) -> str:
    """The workflow: a sequence of `steps` tool steps, step i writes work(i) to `s<i>`."""
    state = ", ".join(f"s{i}: {{type: string}}" for i in range(steps))
    children = "\n".join(
        f"      - tool: {{name: S{i}, tool: work, arguments: {{n: {i}}}, output: s{i}}}"
        for i in range(steps)
    )
    return (
        f"version: 1\nname: ten_steps\nstate: {{{state}}}\n"
        f"root:\n  sequence:\n    name: Main\n    children:\n{children}\n"
    )


def check(values: dict[str, Any]) -> None:
    """Every step ran and wrote its value."""
    assert values[f"s{STEPS - 1}"] == f"v{STEPS - 1}", values


def ours(tree: Tree, store: SQLiteStore | None) -> Callable[[], None]:
    """One fresh run of the tree: durable in `store`, or without a store."""

    def run() -> None:
        result = tree.run(store=store) if store is not None else tree.run()
        assert result.ok, result.reason
        check(result.state)

    return run


def direct() -> None:
    """The floor: the 10 calls of the function made directly."""
    for i in range(STEPS):
        work(i)


def langgraph_missing() -> str:
    """Why the LangGraph anchor cannot run here, or ''."""
    _, missing = optional("langgraph")
    if missing:
        return missing
    if importlib.util.find_spec("langgraph.checkpoint.sqlite") is None:
        return f"langgraph-checkpoint-sqlite is not installed ({BENCH_EXTRA})"
    return ""


def langgraph_run(
    path: Path, durability: str | None = None, synchronous: str | None = None
) -> tuple[Callable[[], None], sqlite3.Connection]:
    """One fresh LangGraph run (a new thread_id) of the same 10 steps, checkpointed to `path`.

    By default LangGraph's own settings: `durability="async"` (a step's checkpoint is written in
    the background while the next step runs) and SQLite's default synchronous=FULL.
    """
    from typing import TypedDict

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    State = TypedDict("State", {f"s{i}": str for i in range(STEPS)}, total=False)

    def step(i: int) -> Callable[[dict[str, Any]], dict[str, str]]:
        def node(state: dict[str, Any]) -> dict[str, str]:
            return {f"s{i}": work(i)}

        return node

    builder = StateGraph(State)
    previous = START
    for i in range(STEPS):
        builder.add_node(f"S{i}", step(i))
        builder.add_edge(previous, f"S{i}")
        previous = f"S{i}"
    builder.add_edge(previous, END)
    connection = sqlite3.connect(path, check_same_thread=False)
    if synchronous is not None:
        connection.execute(f"PRAGMA synchronous={synchronous}")
    graph = builder.compile(checkpointer=SqliteSaver(connection))
    options: dict[str, Any] = {} if durability is None else {"durability": durability}

    def run() -> None:
        config = {"configurable": {"thread_id": uuid.uuid4().hex}}
        check(graph.invoke({}, config, **options))

    return run, connection


def per_step(durable: list[float], plain: list[float]) -> float:
    """Median over rounds of (durable - no store) / steps: the journal's cost per tool call."""
    return statistics.median((d - p) / STEPS for d, p in zip(durable, plain, strict=True))


def pragmas(connection: sqlite3.Connection) -> dict[str, Any]:
    """The journal mode and synchronous level a connection ended up with (for the JSON)."""
    mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
    level = connection.execute("PRAGMA synchronous").fetchone()[0]
    return {"journal_mode": mode, "synchronous": ["OFF", "NORMAL", "FULL", "EXTRA"][level]}


def durability(settings: Settings) -> Section:
    """Durable runs next to runs without a store and next to LangGraph with SqliteSaver."""
    missing = langgraph_missing()
    calls = settings.pick(5, 2)  # runs per sample
    data: dict[str, Any] = {"runs_per_sample": calls}
    with tempfile.TemporaryDirectory(prefix="jianmu-bench-") as folder:
        store = SQLiteStore(Path(folder) / "runs.db")
        tree = load_tree(tree_yaml(), tools=[tool(work)])
        samplers = {
            "plain": per_call(ours(tree, None), calls),
            "durable": per_call(ours(tree, store), calls),
            "direct": per_call(direct, calls),
        }
        connections = {}
        if not missing:
            lg_run, connections["langgraph"] = langgraph_run(Path(folder) / "langgraph.db")
            samplers["langgraph"] = per_call(lg_run, calls)
            lg_sync, connections["langgraph_sync"] = langgraph_run(
                Path(folder) / "langgraph-sync.db", durability="sync", synchronous="NORMAL"
            )
            samplers["langgraph_sync"] = per_call(lg_sync, calls)
        try:
            t = interleave(samplers, rounds=settings.pick(41, 7), warmup=settings.pick(3, 2))
            data["sqlite"] = {name: pragmas(c) for name, c in connections.items()}
        finally:
            tree.close()
            store.close()
            for connection in connections.values():
                connection.close()
    data["samples"] = t
    steps = f"{STEPS} x {NAP * 1e3:g} ms steps"
    return Section(
        f"Durable runs: {steps} in a sequence, SQLite store (durable / no store; LangGraph / ours)",
        [
            within(
                f"durable run, {steps} (SQLite) vs no store",
                t["durable"],
                t["plain"],
                "tree.run() without a store",
                DURABLE_LIMIT,
                "a durable run writes a 'running' and a 'done' journal row and a checkpoint per "
                "tool call (SQLite, WAL, synchronous=NORMAL), one store file across runs",
            ),
            faster(
                "durable run vs LangGraph + SqliteSaver, same 10 steps",
                t["durable"],
                t.get("langgraph"),
                "LangGraph StateGraph + SqliteSaver",
                LANGGRAPH_FACTOR,
                missing
                or "a 10-node chain compiled with SqliteSaver, a new thread_id per run; "
                "LangGraph's defaults: durability='async' (a step's checkpoint is written while "
                "the next step runs), WAL, synchronous=FULL (its time follows the disk's fsync "
                "latency). Both sides sleep the same 10 x 1 ms (the floor row), so the ratio can "
                "be at most LangGraph's time / the floor",
            ),
            faster(
                "  vs LangGraph durability='sync', synchronous=NORMAL",
                t["durable"],
                t.get("langgraph_sync"),
                "LangGraph + SqliteSaver, like ours",
                None,
                missing
                or "each step's checkpoint committed before the next step runs, at our SQLite "
                "setting: the guarantee and cost closest to ours",
            ),
            info(
                "  journal cost per tool call: (durable - no store) / 10",
                per_step(t["durable"], t["plain"]),
            ),
            info(f"  the floor: the {STEPS} calls made directly", statistics.median(t["direct"])),
        ],
        data=data,
    )


AREAS = {"durability": durability}

if __name__ == "__main__":
    sys.exit(main(AREAS))

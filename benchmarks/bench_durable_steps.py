"""The cost of a durable step as runs grow: 100, 1,000 and 10,000 no-op steps.

The workflow: a tree built in Python (a PythonTree), a `Sequence` of 100 ToolNodes, each calling
a sync no-op `@tool`, repeated (`py_trees.decorators.Repeat`) until N steps ran: the run grows
with N, the tree does not (a tick walks every node of the tree, so a flat sequence of N nodes
would measure the tree's size too). Each sample is one fresh run without a store and one durable
run in a SQLite store (WAL, synchronous=NORMAL; one file across runs), interleaved; the per-step
overhead of durability is (durable - no store) / N. Targets (issue 35):

- per-step overhead at most 100 us at every size, and flat: at 10,000 steps within 1.2x of 100;
- at most 0.25x LangGraph's per-step overhead with SqliteSaver: the same N no-op nodes in a
  chain, (with checkpointer - without) / N, LangGraph's defaults (durability="async");
- store bytes per step (the file's size / N), and the overhead on PostgreSQL (reported).

The no-op is declared read-only, as a step that only reads or computes is: it may run again
after a crash, so it writes one journal row, group-committed with the next ones. The same step
undeclared (taken as side-effecting) writes a `running` row before and its outcome after, each
committed at once; its overhead at the middle size is reported beside.

Run: python benchmarks/bench_durable_steps.py [--quick]
"""

from __future__ import annotations

import contextlib
import importlib.util
import statistics
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import py_trees

from benchmarks.harness import (
    BENCH_EXTRA,
    Row,
    Section,
    Settings,
    info,
    interleave,
    limit,
    optional,
    per_call,
    within,
)
from benchmarks.suite import main
from jianmu_bt import AgentState, PythonTree, StateManager, ToolNode, tool
from jianmu_bt.store import RunStore, SQLiteStore

BODY = 100  # the steps of the loop's body: the tree has about as many nodes at every size
STEP_LIMIT = 100e-6  # the per-step overhead of a durable no-op step
FLAT_LIMIT = 1.2  # the overhead at the largest size within this many times the smallest's
LANGGRAPH_SHARE = 0.25  # ours at most this share of LangGraph's per-step overhead


@tool(read_only=True)
def noop() -> int:
    """Nothing at all."""
    return 0


@tool
def noop_effect() -> int:
    """Nothing at all, declared as nothing: taken as side-effecting."""
    return 0


def sequence(steps: int, step: Any = noop) -> PythonTree:
    """A PythonTree that runs `steps` no-op tool steps: a sequence of at most BODY of them,
    repeated until `steps` ran, so that the tree is the same size whatever the run's length."""
    body = min(steps, BODY)
    if steps % body:
        raise ValueError(f"steps must be a multiple of {body}, not {steps}")

    def build() -> py_trees.behaviour.Behaviour:
        children = [ToolNode(step, f"S{i}") for i in range(body)]
        main = py_trees.composites.Sequence("Main", memory=True, children=children)
        if steps == body:
            return main
        return py_trees.decorators.Repeat("Loop", main, num_success=steps // body)

    return PythonTree(f"steps{steps}-{step.name}", build, StateManager(AgentState))


def run_of(tree: PythonTree, store: RunStore | None) -> Callable[[], None]:
    """One fresh run of `tree`: durable in `store`, or without a store."""

    def run() -> None:
        result = tree.run(store=store) if store is not None else tree.run()
        assert result.ok, result.reason

    return run


def overheads(durable: list[float], plain: list[float], steps: int) -> list[float]:
    """Per-step overhead of each paired sample: (durable - no store) / steps."""
    return [(d - p) / steps for d, p in zip(durable, plain, strict=True)]


def langgraph_missing() -> str:
    """Why the LangGraph anchor cannot run here, or ''."""
    _, missing = optional("langgraph")
    if missing:
        return missing
    if importlib.util.find_spec("langgraph.checkpoint.sqlite") is None:
        return f"langgraph-checkpoint-sqlite is not installed ({BENCH_EXTRA})"
    return ""


@contextlib.contextmanager
def langgraph_runs(steps: int, path: Path) -> Iterator[tuple[Callable[[], None], ...]]:
    """A run of a chain of `steps` no-op LangGraph nodes without and with SqliteSaver."""
    import sqlite3
    from typing import TypedDict

    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict, total=False):
        n: int

    def node(state: dict[str, Any]) -> dict[str, int]:
        return {"n": noop.fn()}

    builder = StateGraph(State)
    previous = START
    for i in range(steps):
        builder.add_node(f"S{i}", node)
        builder.add_edge(previous, f"S{i}")
        previous = f"S{i}"
    builder.add_edge(previous, END)
    connection = sqlite3.connect(path, check_same_thread=False)
    plain = builder.compile()
    saved = builder.compile(checkpointer=SqliteSaver(connection))
    limit_ = {"recursion_limit": steps + 10}

    def without() -> None:
        plain.invoke({}, limit_)

    def durable() -> None:
        saved.invoke({}, {**limit_, "configurable": {"thread_id": uuid.uuid4().hex}})

    try:
        yield without, durable
    finally:
        connection.close()


def postgres_dsn() -> tuple[str, Callable[[], None]] | str:
    """A throwaway PostgreSQL server's DSN and its stop(), or why there is none."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    try:
        from postgres_server import PostgresUnavailable, start_postgres
    except ImportError as exc:
        return f"the test suite's PostgreSQL helper is missing: {exc}"
    try:
        return start_postgres()
    except PostgresUnavailable as exc:
        return f"no PostgreSQL server: {exc}"


def durable_steps(settings: Settings) -> Section:
    """The per-step overhead of durable runs by run length, next to LangGraph's."""
    sizes = settings.pick((100, 1_000, 10_000), (100, 1_000, 3_000))
    rounds = settings.pick(7, 3)
    missing = langgraph_missing()
    found: dict[int, list[float]] = {}
    data: dict[str, Any] = {"sizes": list(sizes), "rounds": rounds}
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="jianmu-bench-") as folder:
        for steps in sizes:
            path = Path(folder) / f"runs{steps}.db"
            with SQLiteStore(path) as store, sequence(steps) as tree:
                t = paired(tree, store, rounds)
            found[steps] = overheads(t["durable"], t["plain"], steps)
            runs = rounds + 1  # the warm-up run is stored too
            per_step_bytes = path.stat().st_size / (steps * runs)
            data[str(steps)] = {"samples": t, "bytes_per_step": per_step_bytes}
            rows.append(
                limit(
                    f"durable no-op step overhead, {steps:,} steps (SQLite)",
                    found[steps],
                    STEP_LIMIT,
                    note="(durable run - run without a store) / steps: a 'done' journal row "
                    "per step, group-committed with a checkpoint (mostly a delta)",
                )
            )
            rows.append(info(f"  store bytes per step, {steps:,} steps", per_step_bytes, "bytes"))
        small, large = sizes[0], sizes[-1]
        rows.append(
            within(
                f"  flat: overhead at {large:,} steps vs at {small:,}",
                found[large],
                found[small],
                f"{small:,} steps",
                FLAT_LIMIT,
                "the per-step cost must not grow with the run",
            )
        )
        middle = sizes[1]
        anchor: list[float] | None = None
        if not missing:
            with langgraph_runs(middle, Path(folder) / "langgraph.db") as (without, durable):
                t = interleave(
                    {"plain": per_call(without, 1), "durable": per_call(durable, 1)},
                    rounds=rounds,
                    warmup=1,
                )
            anchor = overheads(t["durable"], t["plain"], middle)
            data["langgraph"] = {"samples": t}
        rows.append(
            within(
                f"per-step overhead vs LangGraph + SqliteSaver, {middle:,} steps",
                found[middle],
                anchor,
                "LangGraph's (checkpointer - none) / steps",
                LANGGRAPH_SHARE,
                missing
                or "a chain of no-op nodes compiled with SqliteSaver, a new thread_id "
                "per run, LangGraph's defaults (durability='async', synchronous=FULL)",
            )
        )
        rows.append(effectful_row(middle, rounds, Path(folder) / "effectful.db", data))
        rows.append(postgres_row(middle, rounds, data))
    return Section(
        "Durable steps by run length: per-step overhead of a durable no-op step (SQLite)",
        rows,
        data=data,
    )


def paired(tree: PythonTree, store: RunStore, rounds: int) -> dict[str, list[float]]:
    """Seconds of runs of `tree` without a store and in `store`, interleaved, after a warm-up."""
    samplers = {"plain": per_call(run_of(tree, None), 1)}
    samplers["durable"] = per_call(run_of(tree, store), 1)
    return interleave(samplers, rounds=rounds, warmup=1)


def effectful_row(steps: int, rounds: int, path: Path, data: dict[str, Any]) -> Row:
    """The per-step overhead of a no-op that declares nothing (reported, no target)."""
    with SQLiteStore(path) as store, sequence(steps, noop_effect) as tree:
        t = paired(tree, store, rounds)
    data["effectful"] = {"samples": t}
    overhead = statistics.median(overheads(t["durable"], t["plain"], steps))
    return info(
        f"  the same step taken as side-effecting, {steps:,} steps (SQLite)",
        overhead,
        note="a `running` row before the call and its outcome after, each committed at once",
    )


def postgres_row(steps: int, rounds: int, data: dict[str, Any]) -> Row:
    """The per-step overhead on a throwaway local PostgreSQL server (reported, no target)."""
    server = postgres_dsn()
    if isinstance(server, str):
        return info(f"durable no-op step overhead, {steps:,} steps (PostgreSQL)", 0.0, note=server)
    dsn, stop = server
    try:
        from jianmu_bt.store import PostgresStore

        with PostgresStore(dsn) as store, sequence(steps) as tree:
            t = paired(tree, store, rounds)
    finally:
        stop()
    data["postgres"] = {"samples": t}
    overhead = statistics.median(overheads(t["durable"], t["plain"], steps))
    return info(
        f"durable no-op step overhead, {steps:,} steps (PostgreSQL, local, fsync=off)",
        overhead,
        note="a throwaway server on 127.0.0.1 (the test suite's); reported, no target",
    )


AREAS = {"durable_steps": durable_steps}

if __name__ == "__main__":
    sys.exit(main(AREAS))

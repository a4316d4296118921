"""Batch runs (`jianmu batch`): a local process pool against Ray, and RayRunner per tool call.

- 1,000 runs of a one-step tree whose tool sleeps 10 ms, each run recorded in an SQLite run
  store: seconds per run on the local pool with 1 and 2 workers (the scaling curve on this
  machine, drawn to `<out>/batch_runs.png`), and on a local Ray with 2 CPUs (started once, not
  timed). Target: Ray's time per run at most 2x the local pool's with the same workers.
- 10,000 calls of a trivial tool through RayRunner (50 in flight; as tasks, and on 2 warm
  actors) next to the same calls made directly in this process: the time each call adds.

Run: python benchmarks/bench_batch_runs.py [--quick]  (the ray extra; matplotlib for the plot)
"""

from __future__ import annotations

import io
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import Row, Section, Settings, info, optional, within
from benchmarks.suite import main
from jianmu_bt.batch import run_batch
from jianmu_bt.tools import tool

TOOL_SECONDS = 0.010
RAY_LIMIT = 2.0  # Ray's time per run at most this many times the local pool's
TOOLS = f'''
import time
from jianmu_bt.tools import tool


@tool
def step(x: int) -> int:
    """Sleep {TOOL_SECONDS * 1000:g} ms, give x + 1."""
    time.sleep({TOOL_SECONDS})
    return x + 1
'''
TREE = """
version: 1
name: bench_batch
state:
  x: {type: integer, input: true}
  y: {type: integer}
tools: ["bench_batch_tools:step"]
root:
  sequence:
    name: Main
    children:
      - tool: {name: Step, tool: step, arguments: {x: "{x}"}, output: y}
"""


@tool
def add(a: int, b: int) -> int:
    """Add two integers (the trivial call of the per-call rows)."""
    return a + b


def setup(folder: Path, runs: int) -> tuple[Path, Path]:
    """The tree, its tool module and an inputs file of `runs` lines in `folder`."""
    (folder / "bench_batch_tools.py").write_text(TOOLS)
    tree = folder / "tree.yaml"
    tree.write_text(TREE)
    inputs = folder / "inputs.jsonl"
    inputs.write_text("".join(f'{{"x": {i}}}\n' for i in range(runs)))
    return tree, inputs


def seconds_per_run(tree: Path, inputs: Path, runs: int, workers: int, ray: str | None) -> float:
    """Wall seconds per run of one whole batch (a fresh store; pool start-up included)."""
    store = tree.parent / f"runs-{uuid.uuid4().hex[:8]}.db"
    out = io.StringIO()
    start = time.perf_counter()
    summary = run_batch(tree, inputs, out=out, workers=workers, ray=ray, store=store)
    elapsed = time.perf_counter() - start
    if summary.counts.get("done") != runs:
        raise RuntimeError(f"the benchmark batch did not succeed: {summary.counts}")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store}{suffix}").unlink(missing_ok=True)
    return elapsed / runs


async def per_call(runner: Any, calls: int, in_flight: int = 50) -> float:
    """Seconds per call of `add` for `calls` calls, `in_flight` at a time."""
    limiter = anyio.CapacityLimiter(in_flight)

    async def one(i: int) -> None:
        async with limiter:
            result = await add.call({"a": i, "b": 1}, runner=runner)
            if not result.ok:
                raise RuntimeError(f"the benchmark call failed: {result}")

    start = time.perf_counter()
    async with anyio.create_task_group() as group:
        for i in range(calls):
            group.start_soon(one, i)
    return (time.perf_counter() - start) / calls


def plot(points: dict[str, dict[int, float]], path: Path) -> None:
    """Runs per second against workers, one line per executor."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for name, curve in points.items():
        workers = sorted(curve)
        ax.plot(workers, [1 / curve[w] for w in workers], marker="o", label=name)
    ideal = {w: w / TOOL_SECONDS for w in (1, 2)}
    ax.plot(list(ideal), list(ideal.values()), linestyle=":", color="grey", label="ideal (10 ms)")
    ax.set_xlabel("workers")
    ax.set_ylabel("runs per second")
    ax.set_xticks([1, 2])
    ax.set_title("jianmu batch: 1-step tree, 10 ms tool, SQLite store")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def batch_runs(settings: Settings) -> Section:
    """Pool throughput by workers, Ray's time per run against the pool's, RayRunner per call."""
    ray_module, missing = optional("ray")
    runs = settings.pick(1000, 200)
    rounds = settings.pick(3, 1)
    folder = Path(tempfile.mkdtemp(prefix="jianmu-bench-batch-"))
    rows: list[Row] = []
    points: dict[str, dict[int, float]] = {"local pool": {}}
    files: list[Path] = []
    try:
        tree, inputs = setup(folder, runs)
        pool: dict[int, list[float]] = {1: [], 2: []}
        on_ray: list[float] = []
        stop = None
        if ray_module is not None:
            from jianmu_bt.sandbox.ray_runner import start_local_ray

            stop = start_local_ray(2)
        try:
            for _ in range(rounds):  # interleaved: a busier machine slows every contender alike
                for workers in (1, 2):
                    pool[workers].append(seconds_per_run(tree, inputs, runs, workers, None))
                if stop is not None:
                    on_ray.append(seconds_per_run(tree, inputs, runs, 2, "local"))
            for workers in (1, 2):
                median = statistics.median(pool[workers])
                points["local pool"][workers] = median
                rows.append(
                    info(
                        f"local pool, {workers} worker(s): per run ({runs} runs)",
                        median,
                        note=f"{1 / median:.0f} runs/s; ideal {workers / TOOL_SECONDS:.0f} runs/s",
                    )
                )
            if stop is None:
                skipped = Row("Ray: not measured", None, None, "-", None, "-", None, note=missing)
                rows.append(skipped)
            else:
                points["Ray (2 CPUs)"] = {2: statistics.median(on_ray)}
                rows.append(
                    within(
                        f"Ray, 2 CPUs: per run ({runs} runs)",
                        on_ray,
                        pool[2],
                        "local pool, 2 workers",
                        RAY_LIMIT,
                        note="Ray start-up not timed",
                    )
                )
                rows.extend(ray_runner_rows(settings))
        finally:
            if stop is not None:
                stop()
        _, no_plot = optional("matplotlib")
        if not no_plot:
            path = settings.out / "batch_runs.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            plot(points, path)
            files.append(path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    data = {name: {str(k): v for k, v in curve.items()} for name, curve in points.items()}
    title = "Batch runs: local pool vs Ray; RayRunner per call"
    return Section(title, rows, data=data, files=files)


def ray_runner_rows(settings: Settings) -> list[Row]:
    """10,000 trivial calls through RayRunner next to the same calls made here."""
    from jianmu_bt.sandbox import RayRunner

    calls = settings.pick(10_000, 1_000)
    runner, warm = RayRunner(), RayRunner(warm=2, num_cpus=0.5)

    async def measure() -> tuple[float, float, float]:
        await per_call(runner, 100)  # warm-up: workers import the tool
        await per_call(warm, 100)  # the actors start
        direct = await per_call(None, calls)
        remote = await per_call(runner, calls)
        on_actors = await per_call(warm, calls)
        return direct, remote, on_actors

    try:
        direct, remote, on_actors = anyio.run(measure)
    finally:
        warm.close()
    return [
        info(f"direct call: per call ({calls} calls)", direct),
        info(
            f"RayRunner call: per call ({calls} calls, 50 in flight)",
            remote,
            note=f"adds {(remote - direct) * 1e3:.2f} ms per call",
        ),
        info(
            f"RayRunner(warm=2) call: per call ({calls} calls on 2 actors)",
            on_actors,
            note=f"adds {(on_actors - direct) * 1e3:.2f} ms per call",
        ),
    ]


AREAS = {"batch_runs": batch_runs}

if __name__ == "__main__":
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    sys.exit(main(AREAS))

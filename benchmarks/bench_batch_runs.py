"""Batch runs (`jianmu batch`): a local process pool against Ray, and RayRunner per tool call.

- 1,000 runs of a one-step tree whose tool sleeps 10 ms, each run recorded in an SQLite run
  store: the time per run on the local pool with 1 and 2 workers (the scaling curve on this
  machine, drawn to `<out>/batch_runs.png`), on a local Ray with 2 CPUs (started once, not
  timed), and of a plain `multiprocessing.Pool(2)` calling the tool's function (no tree, no
  store: the floor of a process pool). Each is the progress rate after start-up: from the first
  result to the last, so process and worker start-up are not counted. Targets: Ray's time per
  run at most 1.3x the local pool's with the same workers; the local pool's at most 1.3x the
  plain pool's.
- 10,000 calls of a trivial tool through RayRunner (50 in flight; as tasks, and on 2 warm
  actors) next to the same calls made directly in this process: the time each call adds.

Run: python -m benchmarks --only batch_runs --out benchmarks/figures/scale-out (the ray extra;
matplotlib for the plot); then `python -m benchmarks.scale_out_docs` writes the figures of
docs/scale-out.md from that results file.
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
RAY_LIMIT = 1.3  # Ray's time per run at most this many times the local pool's
POOL_LIMIT = 1.3  # the local pool's at most this many times a plain multiprocessing.Pool's
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


class Stamped(io.StringIO):
    """An output stream that notes when each result line was written."""

    def __init__(self) -> None:
        super().__init__()
        self.stamps: list[float] = []

    def write(self, text: str) -> int:
        """Write, noting the time."""
        self.stamps.append(time.perf_counter())
        return super().write(text)


def after_start(stamps: list[float]) -> float:
    """Seconds per result after start-up: from the first result to the last."""
    if len(stamps) < 2:
        raise RuntimeError("the benchmark needs at least two results")
    return (stamps[-1] - stamps[0]) / (len(stamps) - 1)


def seconds_per_run(tree: Path, inputs: Path, runs: int, workers: int, ray: str | None) -> float:
    """Seconds per run of one whole batch after its start-up (a fresh store)."""
    store = tree.parent / f"runs-{uuid.uuid4().hex[:8]}.db"
    out = Stamped()
    summary = run_batch(tree, inputs, out=out, workers=workers, ray=ray, store=store)
    if summary.counts.get("done") != runs:
        raise RuntimeError(f"the benchmark batch did not succeed: {summary.counts}")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store}{suffix}").unlink(missing_ok=True)
    return after_start(out.stamps)


def plain_step(x: int) -> int:
    """The tool's own work without jianmu: sleep, give x + 1."""
    time.sleep(TOOL_SECONDS)
    return x + 1


def plain_pool_per_run(runs: int, workers: int = 2) -> float:
    """Seconds per call after start-up of `multiprocessing.Pool(workers)` (spawned, as the
    batch's pool) calling `plain_step` for each input, one at a time per worker."""
    import multiprocessing

    stamps = []
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        for _ in pool.imap_unordered(plain_step, range(runs), chunksize=1):
            stamps.append(time.perf_counter())
    return after_start(stamps)


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
    """Per run after start-up: local pool (1, 2 workers), Ray, a plain Pool(2); RayRunner calls."""
    ray_module, missing = optional("ray")
    runs = settings.pick(1000, 200)
    rounds = settings.pick(3, 1)
    folder = Path(tempfile.mkdtemp(prefix="jianmu-bench-batch-"))
    rows: list[Row] = []
    points: dict[str, dict[int, float]] = {"local pool": {}}
    files: list[Path] = []
    per_run: dict[str, list[float]] = {"pool-1": [], "pool-2": [], "ray-2": [], "plain-2": []}
    try:
        tree, inputs = setup(folder, runs)
        stop = None
        if ray_module is not None:
            from jianmu_bt.sandbox.ray_runner import start_local_ray

            stop = start_local_ray(2)
        try:
            for _ in range(rounds):  # interleaved: a busier machine slows every contender alike
                for workers in (1, 2):
                    per_run[f"pool-{workers}"].append(
                        seconds_per_run(tree, inputs, runs, workers, None)
                    )
                per_run["plain-2"].append(plain_pool_per_run(runs))
                if stop is not None:
                    per_run["ray-2"].append(seconds_per_run(tree, inputs, runs, 2, "local"))
            rows.extend(pool_rows(per_run, runs, points))
            if stop is None:
                skipped = Row("Ray: not measured", None, None, "-", None, "-", None, note=missing)
                rows.append(skipped)
            else:
                points["Ray (2 CPUs)"] = {2: statistics.median(per_run["ray-2"])}
                rows.append(
                    within(
                        f"Ray, 2 CPUs: per run ({runs} runs)",
                        per_run["ray-2"],
                        per_run["pool-2"],
                        "local pool, 2 workers",
                        RAY_LIMIT,
                        note="after start-up",
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
    data: dict[str, Any] = {
        name: {str(k): v for k, v in curve.items()} for name, curve in points.items()
    }
    data["per_run"] = per_run
    data["runs"], data["rounds"], data["tool_seconds"] = runs, rounds, TOOL_SECONDS
    title = "Batch runs: local pool vs Ray vs a plain Pool; RayRunner per call"
    return Section(title, rows, data=data, files=files)


def pool_rows(
    per_run: dict[str, list[float]], runs: int, points: dict[str, dict[int, float]]
) -> list[Row]:
    """The local pool's rows: 1 worker (context), 2 workers against the plain Pool(2)."""
    one = statistics.median(per_run["pool-1"])
    points["local pool"] = {1: one, 2: statistics.median(per_run["pool-2"])}
    return [
        info(
            f"local pool, 1 worker: per run ({runs} runs)",
            one,
            note=f"{1 / one:.0f} runs/s; ideal {1 / TOOL_SECONDS:.0f} runs/s",
        ),
        info(
            f"multiprocessing.Pool(2), the tool's function: per call ({runs} calls)",
            statistics.median(per_run["plain-2"]),
            note="no tree, no store",
        ),
        within(
            f"local pool, 2 workers: per run ({runs} runs)",
            per_run["pool-2"],
            per_run["plain-2"],
            "multiprocessing.Pool(2)",
            POOL_LIMIT,
            note="after start-up",
        ),
    ]


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

"""Start-up and per-call overhead of each sandbox runner for a trivial tool call.

The anchor: the same call in this process (no runner). Runners: LocalSandbox cold (a fresh
sandboxed process per call), LocalSandbox warm (one long-lived worker), DockerSandbox cold and warm
(when an engine and the image are available; run `eval "$(bash .ci/setup-docker.sh)"` first; the
image is `$JIANMU_DOCKER_IMAGE`, by default jianmu-sandbox-python:test). Each is warmed up, then
timed call by call; the rows show medians. Target: a warm LocalSandbox call adds under 5 ms.

Run: python benchmarks/bench_runners.py [--quick]
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import Row, Section, Settings, ainterleave, aper_call, info
from benchmarks.suite import main
from jianmu_bt.sandbox import DockerSandbox, LocalSandbox, SandboxLimits
from jianmu_bt.tools import tool

WARM_LIMIT = 0.005  # seconds a warm LocalSandbox call may add


@tool
def add(a: int, b: int) -> int:
    """Add two integers (the trivial call every runner makes)."""
    return a + b


async def measure(runner: Any, calls: int, warmup: int = 3) -> tuple[float, list[float]]:
    """The first call's seconds, and seconds per call after a warm-up, through `runner`."""

    async def call() -> None:
        result = await add.call({"a": 2, "b": 3}, runner=runner)
        if not result.ok or result.output != 5:
            raise RuntimeError(f"the benchmark call failed: {result}")

    start = time.perf_counter()
    await call()
    first = time.perf_counter() - start
    samples = await ainterleave({"call": aper_call(call, 1)}, rounds=calls, warmup=warmup)
    return first, samples["call"]


def docker_problem(image: str) -> str | None:
    """Why Docker cannot be measured here, or None."""
    try:
        import docker

        client = docker.from_env(timeout=5)
        client.ping()
        client.images.get(image)
        client.close()
    except Exception as exc:  # any failure means: not measurable here, say why
        return f"{type(exc).__name__}: {exc}"[:160]
    return None


def overhead_row(what: str, samples: list[float], anchor: list[float], limit: float | None) -> Row:
    """Per-call time next to the in-process call; the target bounds the time added."""
    ours, base = statistics.median(samples), statistics.median(anchor)
    target = f"+<={limit * 1e3:g} ms" if limit else "-"
    added = f"adds {(ours - base) * 1e3:.2f} ms per call"
    if limit:
        added += f" (target: at most {limit * 1e3:g} ms)"
    met = None if limit is None else ours - base <= limit
    return Row(what, ours, base, "in-process call", ours / base, target, met, note=added)


async def measure_all(settings: Settings) -> list[Row]:
    """Rows for every runner that can run here."""
    calls = settings.pick(200, 30)
    limits = SandboxLimits(timeout=30)
    _, anchor = await measure(None, calls * 5)
    rows = [info("in-process call (the anchor)", statistics.median(anchor))]
    async with LocalSandbox(limits) as cold:
        first, samples = await measure(cold, settings.pick(10, 3), warmup=1)
    rows.append(
        info("LocalSandbox cold: a fresh sandboxed process per call", statistics.median(samples))
    )
    async with LocalSandbox(limits, warm=True) as warm:
        first, samples = await measure(warm, calls)
    rows.append(info("  LocalSandbox warm: first call (starts the worker)", first))
    rows.append(overhead_row("LocalSandbox warm: per call", samples, anchor, WARM_LIMIT))

    image = os.environ.get("JIANMU_DOCKER_IMAGE", "jianmu-sandbox-python:test")
    problem = docker_problem(image)
    if problem is not None:
        rows.append(
            Row("DockerSandbox: not measured", None, None, "-", None, "-", None, note=problem)
        )
        return rows
    async with DockerSandbox(image, limits) as docker_cold:
        _, samples = await measure(docker_cold, settings.pick(5, 2), warmup=1)
    rows.append(info("DockerSandbox cold: a container per call", statistics.median(samples)))
    async with DockerSandbox(image, limits, warm=True) as docker_warm:
        _, samples = await measure(docker_warm, calls)
    rows.append(overhead_row("DockerSandbox warm: per call", samples, anchor, None))
    return rows


def runners(settings: Settings) -> Section:
    """A trivial call through each sandbox runner, next to the same call in this process."""
    return Section("Sandbox runners: a trivial tool call", anyio.run(measure_all, settings))


AREAS = {"runners": runners}

if __name__ == "__main__":
    sys.exit(main(AREAS))

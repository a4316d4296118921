"""Start-up and per-call overhead of each runner for a trivial tool call, side by side.

    python benchmarks/bench_runners.py [--calls 200] [--image jianmu-sandbox-python:test]

Anchor: the same call in-process (no runner). Runners: LocalSandbox cold (a fresh sandboxed
process per call), LocalSandbox warm (one long-lived worker), DockerSandbox cold and warm (when
an engine and the image are available; run `eval "$(bash .ci/setup-docker.sh)"` first).
Each is warmed up, then timed over repeated calls; medians are printed with the overhead over
the anchor and the ratio. Target: a warm LocalSandbox call adds under 5 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from jianmu_bt.sandbox import DockerSandbox, LocalSandbox, SandboxLimits
from jianmu_bt.tools import tool

TARGET_WARM_LOCAL_MS = 5.0


@tool
def add(a: int, b: int) -> int:
    """Add two integers (the trivial call every runner makes)."""
    return a + b


async def timed(call: Callable[[], Awaitable[Any]], repeat: int) -> list[float]:
    """Seconds per call, for `repeat` calls (each result must be correct)."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = await call()
        samples.append(time.perf_counter() - started)
        if not result.ok or result.output != 5:
            raise RuntimeError(f"the benchmark call failed: {result}")
    return samples


async def measure(runner: Any, calls: int, warmup: int = 3) -> tuple[float, float]:
    """(first call seconds, median seconds per call after warm-up) through `runner`."""
    first = (await timed(lambda: add.call({"a": 2, "b": 3}, runner=runner), 1))[0]
    await timed(lambda: add.call({"a": 2, "b": 3}, runner=runner), warmup)
    samples = await timed(lambda: add.call({"a": 2, "b": 3}, runner=runner), calls)
    return first, statistics.median(samples)


def docker_problem(image: str) -> str | None:
    """Why Docker cannot be measured here, or None."""
    try:
        import docker

        client = docker.from_env(timeout=5)
        client.ping()
        client.images.get(image)
        client.close()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"[:120]
    return None


async def main(calls: int, image: str) -> None:
    limits = SandboxLimits(timeout=30)
    rows: list[tuple[str, float | None, float | None, str]] = []
    anchor_first, anchor = await measure(None, calls * 5)
    rows.append(("in-process (anchor)", anchor_first, anchor, ""))

    async with LocalSandbox(limits) as cold:
        rows.append(("LocalSandbox cold", *await measure(cold, max(calls // 20, 5)), ""))
    async with LocalSandbox(limits, warm=True) as warm:
        rows.append(("LocalSandbox warm", *await measure(warm, calls), ""))

    problem = docker_problem(image)
    if problem is None:
        async with DockerSandbox(image, limits) as docker_cold:
            rows.append(("DockerSandbox cold", *await measure(docker_cold, 5, warmup=1), ""))
        async with DockerSandbox(image, limits, warm=True) as docker_warm:
            rows.append(("DockerSandbox warm", *await measure(docker_warm, calls), ""))
    else:
        rows.append(("DockerSandbox", None, None, f"not measured: {problem}"))

    print(f"trivial tool call, median of repeated calls (cpus: {os.cpu_count()})")
    print(f"{'runner':<22}{'first call':>12}{'per call':>12}{'overhead':>12}{'ratio':>10}")
    for name, first, per_call, note in rows:
        if per_call is None:
            print(f"{name:<22}{note}")
            continue
        overhead = (per_call - anchor) * 1000
        print(
            f"{name:<22}{first * 1000:>10.2f}ms{per_call * 1000:>10.3f}ms"
            f"{overhead:>10.3f}ms{per_call / anchor:>9.0f}x"
        )
    warm_row = next(r for r in rows if r[0] == "LocalSandbox warm")
    warm_overhead = (warm_row[2] - anchor) * 1000
    verdict = "met" if warm_overhead < TARGET_WARM_LOCAL_MS else "MISSED"
    print(
        f"target: warm LocalSandbox overhead < {TARGET_WARM_LOCAL_MS:g} ms: "
        f"{warm_overhead:.3f} ms ({verdict})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="timed calls per warm runner")
    parser.add_argument(
        "--image", default=os.environ.get("JIANMU_DOCKER_IMAGE", "jianmu-sandbox-python:test")
    )
    options = parser.parse_args()
    anyio.run(main, options.calls, options.image)

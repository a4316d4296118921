"""Small timing harness shared by the benchmark scripts: warm-up, repeats, medians, a table."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass
class Row:
    """One comparison: our median next to the anchor's, and the target ratio (anchor / ours)."""

    what: str
    ours: float
    anchor: float
    anchor_name: str
    target: float | None = None

    @property
    def ratio(self) -> float:
        return self.anchor / self.ours if self.ours > 0 else float("inf")

    @property
    def met(self) -> str:
        if self.target is None:
            return "-"
        return "yes" if self.ratio >= self.target else "NO"


def per_call(fn: Callable[[], object], calls: int, repeats: int, warmup: int = 1) -> float:
    """Median seconds per call of a sync function over `repeats` batches of `calls` calls."""
    for _ in range(warmup):
        for _ in range(calls):
            fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)


async def per_call_async(
    fn: Callable[[], Awaitable[object]], calls: int, repeats: int, warmup: int = 1
) -> float:
    """Median seconds per awaited call of `fn()` over `repeats` batches of `calls` calls."""
    for _ in range(warmup):
        for _ in range(calls):
            await fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            await fn()
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)


def fmt_time(seconds: float) -> str:
    """Seconds in the most readable unit."""
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.2f} us"


def print_table(title: str, rows: list[Row]) -> None:
    """Print rows as: what | ours | anchor | anchor/ours | target | met."""
    print(f"\n{title}")
    header = f"{'measure':<52} {'ours':>10} {'anchor':>10} {'ratio':>8} {'target':>8}  met  anchor"
    print(header)
    print("-" * len(header))
    for row in rows:
        target = f">={row.target:g}x" if row.target else "-"
        print(
            f"{row.what:<52} {fmt_time(row.ours):>10} {fmt_time(row.anchor):>10} "
            f"{row.ratio:>7.1f}x {target:>8}  {row.met:<4} {row.anchor_name}"
        )

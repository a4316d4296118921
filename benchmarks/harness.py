"""The shared benchmark harness: interleaved timing, result rows with targets, and the table.

Every area script measures with `interleave`/`ainterleave` (warm-up rounds, then every contender
takes one turn per round in rotated order, so a machine that gets busier slows all of them alike)
and reports `Row`s built by `faster`, `within`, `ideal`, `limit`, `share` or `info`: the median,
the spread over rounds (p25-p75 of the per-round ratios, or of the values), the target and the
verdict. `table.py` prints them as one table; `suite.py` gathers the sections of a whole run and
marks the verdicts taken under heavy machine load.
"""

from __future__ import annotations

import gc
import importlib
import os
import statistics
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

RESULTS = Path(__file__).resolve().parent / "results"
BENCH_EXTRA = "pip install -e '.[bench]'"

Unit = Literal["s", "share", "bytes"]
Samples = dict[str, list[float]]


@dataclass(frozen=True)
class Settings:
    """How hard to measure: `quick` trades precision for time; `out` is where files go."""

    quick: bool = False
    out: Path = RESULTS

    def pick(self, full: int, quick: int) -> int:
        """`full` normally, `quick` in quick mode (rounds, calls per sample, sizes)."""
        return quick if self.quick else full


# -- timing ---------------------------------------------------------------------------------


#: The environment of a benchmark's fresh processes: that of a user's process, whose bytecode cache
#: the warm-up writes (an installed package's is written at install). A PYTHONDONTWRITEBYTECODE of
#: the shell running the benchmark would have every sample compile again each module changed
#: since the cache was last written.
PROCESS_ENV = {
    name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"
}


def interleave(samplers: dict[str, Callable[[], float]], rounds: int, warmup: int = 2) -> Samples:
    """Samples of each sampler; every sampler takes a turn in every round, in rotated order."""
    names = list(samplers)
    samples: Samples = {name: [] for name in names}
    for index in range(warmup + rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            value = samplers[name]()
            if index >= warmup:
                samples[name].append(value)
    return samples


async def ainterleave(
    samplers: dict[str, Callable[[], Awaitable[float]]], rounds: int, warmup: int = 2
) -> Samples:
    """`interleave` for async samplers."""
    names = list(samplers)
    samples: Samples = {name: [] for name in names}
    for index in range(warmup + rounds):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            value = await samplers[name]()
            if index >= warmup:
                samples[name].append(value)
    return samples


def per_call(fn: Callable[[], object], calls: int) -> Callable[[], float]:
    """A sampler: seconds per call over `calls` calls of `fn` in a row."""

    def sample() -> float:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - start) / calls

    return sample


def aper_call(fn: Callable[[], Awaitable[object]], calls: int) -> Callable[[], Awaitable[float]]:
    """An async sampler: seconds per awaited call over `calls` calls of `fn()` in a row."""

    async def sample() -> float:
        start = time.perf_counter()
        for _ in range(calls):
            await fn()
        return (time.perf_counter() - start) / calls

    return sample


def ratios(top: list[float], bottom: list[float]) -> list[float]:
    """The per-round ratios top/bottom (robust to load that drifts between rounds); the ratio of
    the medians when the two were not sampled in the same rounds."""
    if len(top) != len(bottom):
        return [statistics.median(top) / statistics.median(bottom)]
    return [a / b for a, b in zip(top, bottom, strict=True)]


def paired(top: list[float], bottom: list[float]) -> float:
    """Median of the per-round ratios top/bottom."""
    return statistics.median(ratios(top, bottom))


def quartiles(values: list[float]) -> tuple[float, float]:
    """p25 and p75 of `values` (both the value itself when there is only one)."""
    if len(values) < 2:
        return values[0], values[0]
    low, _, high = statistics.quantiles(values, n=4, method="inclusive")
    return low, high


class Traced:
    """Python memory allocated since entering (tracemalloc), for memory rows.

    `with Traced() as mem: ...; mem.now()` gives the bytes still allocated, `mem.peak()` the most
    at any moment since entering; garbage is collected first so only live objects count.
    """

    def __enter__(self) -> Traced:
        self._started = not tracemalloc.is_tracing()
        if self._started:
            tracemalloc.start()
        gc.collect()
        tracemalloc.reset_peak()
        self._base = tracemalloc.get_traced_memory()[0]
        return self

    def now(self) -> int:
        """Bytes allocated since entering that are still alive."""
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - self._base

    def peak(self) -> int:
        """The most bytes allocated at once since entering."""
        return tracemalloc.get_traced_memory()[1] - self._base

    def __exit__(self, *exc_info: object) -> None:
        if self._started:
            tracemalloc.stop()


def optional(module: str) -> tuple[ModuleType | None, str]:
    """An anchor's module, or None and the reason to show in its row."""
    try:
        return importlib.import_module(module), ""
    except ImportError:
        return None, f"{module.split('.')[0]} is not installed ({BENCH_EXTRA})"


# -- rows ---------------------------------------------------------------------------------


@dataclass
class Row:
    """One line of the table: our median, the anchor's median, the ratio, target and verdict.

    `ratio` is anchor/ours for a ">=" target, ours/anchor for a "<=Nx" target and ours/ideal for
    an absolute target; `spread` is p25-p75 of the per-round ratios (or of our values when there
    is no ratio). `score` is how many times over the target is beaten (>= 1: met); `met` is None
    when there is no target or nothing to compare with. `headline` names the row of the issue's
    table it answers (see `report.py`); `load` is set by the suite when the machine was busy
    while the row was measured, and turns the verdict into "load" (not a verdict).
    """

    what: str
    ours: float | None
    anchor: float | None
    anchor_name: str
    ratio: float | None
    target: str
    met: bool | None
    unit: Unit = "s"
    note: str = ""
    area: str = ""
    spread: tuple[float, float] | None = None
    score: float | None = None
    headline: str = ""
    load: float | None = None

    def verdict(self) -> str:
        """yes / NO, 'load' (measured under heavy load: not a verdict), '-' (no target) or n/a
        (a target but nothing to compare with)."""
        if self.met is None:
            return "n/a" if self.target != "-" else "-"
        if self.load is not None:
            return "load"
        return "yes" if self.met else "NO"

    def to_json(self) -> dict[str, Any]:
        """The row as plain JSON values, with its verdict."""
        return asdict(self) | {"verdict": self.verdict()}


def _median(samples: list[float] | None) -> float | None:
    return statistics.median(samples) if samples else None


def _scored(row: Row, score: float | None, headline: str) -> Row:
    row.score, row.headline = score, headline
    row.met = None if score is None else score >= 1
    return row


def faster(
    what: str,
    ours: list[float],
    anchor: list[float] | None,
    anchor_name: str,
    factor: float | None,
    note: str = "",
    headline: str = "",
) -> Row:
    """Ours should take `factor` times less than the anchor (ratio = anchor / ours)."""
    each = ratios(anchor, ours) if anchor else None
    ratio = statistics.median(each) if each else None
    target = f">={factor:g}x" if factor else "-"
    row = Row(what, _median(ours), _median(anchor), anchor_name, ratio, target, None, note=note)
    row.spread = quartiles(each) if each else quartiles(ours)
    return _scored(row, None if not factor or ratio is None else ratio / factor, headline)


def within(
    what: str,
    ours: list[float],
    anchor: list[float] | None,
    anchor_name: str,
    limit: float | None,
    note: str = "",
    unit: Unit = "s",
    headline: str = "",
) -> Row:
    """Ours should stay within `limit` times the anchor (ratio = ours / anchor)."""
    each = ratios(ours, anchor) if anchor else None
    ratio = statistics.median(each) if each else None
    target = f"<={limit:g}x" if limit else "-"
    row = Row(what, _median(ours), _median(anchor), anchor_name, ratio, target, None, unit, note)
    row.spread = quartiles(each) if each else quartiles(ours)
    return _scored(row, None if not limit or ratio is None else limit / ratio, headline)


def ideal(
    what: str,
    ours: list[float],
    best: float,
    limit: float | None,
    note: str = "",
    headline: str = "",
) -> Row:
    """A wall time next to the ideal time, with an absolute limit (ratio = ours / ideal)."""
    value = statistics.median(ours)
    target = f"<={fmt_limit(limit)}" if limit else "-"
    row = Row(what, value, best, "ideal", value / best, target, None, note=note)
    row.spread = quartiles([x / best for x in ours])
    return _scored(row, None if limit is None else limit / value, headline)


def limit(
    what: str,
    ours: list[float],
    most: float | None,
    unit: Unit = "s",
    note: str = "",
    headline: str = "",
) -> Row:
    """A measured value (time, time per item, bytes) under an absolute limit `most`."""
    value = statistics.median(ours)
    target = f"<={fmt_value(most, unit, short=True)}" if most else "-"
    row = Row(what, value, None, "-", None, target, None, unit, note, spread=quartiles(ours))
    return _scored(row, None if not most else most / value, headline)


def share(what: str, value: float, most: float, note: str = "") -> Row:
    """A share of one core (CPU seconds / wall seconds) under an absolute limit."""
    row = Row(what, value, None, "-", None, f"<{most:.0%}", None, "share", note)
    return _scored(row, most / value if value else float("inf"), "")


def info(what: str, ours: float, unit: Unit = "s", note: str = "") -> Row:
    """A measured value with nothing to compare it with (context for the rows around it)."""
    return Row(what, ours, None, "-", None, "-", None, unit, note)


# -- values ---------------------------------------------------------------------------------


def fmt_time(seconds: float, short: bool = False) -> str:
    """Seconds in the most readable unit ('12.34 ms'; `short`: '12.3 ms' style, for targets)."""
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "us")):
        if seconds >= scale or unit == "us":
            return f"{seconds / scale:g} {unit}" if short else f"{seconds / scale:.2f} {unit}"
    raise AssertionError("unreachable")


def fmt_limit(seconds: float) -> str:
    """A time limit, short: '115 ms', '0.5 s'."""
    return f"{seconds * 1e3:g} ms" if seconds < 0.5 else f"{seconds:g} s"


def fmt_bytes(count: float) -> str:
    """A byte count in the most readable unit."""
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(count) >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count:.0f} B"


def fmt_value(value: float | None, unit: Unit, short: bool = False) -> str:
    """A cell: a time, a byte count, a share of a core, or '-'."""
    if value is None:
        return "-"
    if unit == "share":
        return f"{value:.2%}"
    if unit == "bytes":
        return fmt_bytes(value)
    return fmt_time(value, short)


@dataclass
class Section:
    """What one area measured: its rows, plus extra tables, JSON data and files it wrote."""

    title: str
    rows: list[Row]
    tables: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)

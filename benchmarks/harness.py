"""The shared benchmark harness: interleaved timing, result rows with targets, and the table.

Every area script measures with `interleave`/`ainterleave` (warm-up rounds, then every contender
takes one turn per round in rotated order, so a machine that gets busier slows all of them alike)
and reports `Row`s built by `faster`, `within`, `ideal`, `share` or `info`. `print_section`
prints them as one table; `suite.py` gathers the sections of a whole run.
"""

from __future__ import annotations

import gc
import importlib
import statistics
import textwrap
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


def paired(top: list[float], bottom: list[float]) -> float:
    """Median of the per-round ratios top/bottom (robust to load that drifts between rounds)."""
    if len(top) != len(bottom):
        return statistics.median(top) / statistics.median(bottom)
    return statistics.median(a / b for a, b in zip(top, bottom, strict=True))


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


# -- rows -----------------------------------------------------------------------------------


@dataclass
class Row:
    """One line of the table: our median, the anchor's median, the ratio, target and verdict.

    `ratio` is anchor/ours for a ">=" target, ours/anchor for a "<=Nx" target and ours/ideal for
    an absolute target; `met` is None when there is no target or nothing to compare with.
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

    def to_json(self) -> dict[str, Any]:
        """The row as plain JSON values."""
        return asdict(self)


def _median(samples: list[float] | None) -> float | None:
    return statistics.median(samples) if samples else None


def faster(
    what: str,
    ours: list[float],
    anchor: list[float] | None,
    anchor_name: str,
    factor: float | None,
    note: str = "",
) -> Row:
    """Ours should take `factor` times less than the anchor (ratio = anchor / ours)."""
    ratio = paired(anchor, ours) if anchor else None
    met = None if factor is None or ratio is None else ratio >= factor
    target = f">={factor:g}x" if factor else "-"
    return Row(what, _median(ours), _median(anchor), anchor_name, ratio, target, met, note=note)


def within(
    what: str,
    ours: list[float],
    anchor: list[float] | None,
    anchor_name: str,
    limit: float | None,
    note: str = "",
    unit: Unit = "s",
) -> Row:
    """Ours should stay within `limit` times the anchor (ratio = ours / anchor)."""
    ratio = paired(ours, anchor) if anchor else None
    met = None if limit is None or ratio is None else ratio <= limit
    target = f"<={limit:g}x" if limit else "-"
    return Row(what, _median(ours), _median(anchor), anchor_name, ratio, target, met, unit, note)


def ideal(what: str, ours: list[float], best: float, limit: float | None, note: str = "") -> Row:
    """A wall time next to the ideal time, with an absolute limit (ratio = ours / ideal)."""
    value = statistics.median(ours)
    met = None if limit is None else value <= limit
    target = f"<={fmt_limit(limit)}" if limit else "-"
    return Row(what, value, best, "ideal", value / best, target, met, note=note)


def share(what: str, value: float, limit: float, note: str = "") -> Row:
    """A share of one core (CPU seconds / wall seconds) under an absolute limit."""
    return Row(what, value, None, "-", None, f"<{limit:.0%}", value < limit, "share", note)


def info(what: str, ours: float, unit: Unit = "s", note: str = "") -> Row:
    """A measured value with nothing to compare it with (context for the rows around it)."""
    return Row(what, ours, None, "-", None, "-", None, unit, note)


# -- output ---------------------------------------------------------------------------------


def fmt_time(seconds: float) -> str:
    """Seconds in the most readable unit."""
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.2f} us"


def fmt_limit(seconds: float) -> str:
    """A time limit, short: '115 ms', '0.5 s'."""
    return f"{seconds * 1e3:g} ms" if seconds < 0.5 else f"{seconds:g} s"


def fmt_bytes(count: float) -> str:
    """A byte count in the most readable unit."""
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(count) >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count:.0f} B"


def fmt_value(value: float | None, unit: Unit) -> str:
    """A cell: a time, a byte count, a share of a core, or '-'."""
    if value is None:
        return "-"
    if unit == "share":
        return f"{value:.2%}"
    return fmt_bytes(value) if unit == "bytes" else fmt_time(value)


def verdict(row: Row) -> str:
    """yes / NO / '-' (no target) / n/a (a target but nothing to compare with)."""
    if row.met is None:
        return "n/a" if row.target != "-" else "-"
    return "yes" if row.met else "NO"


WIDTH = 58


def table_header() -> str:
    """The column titles and a rule under them."""
    header = (
        f"{'measure':<{WIDTH}} {'ours':>10} {'anchor':>10} {'ratio':>8} {'target':>9}  "
        f"{'met':<4} anchor"
    )
    return f"{header}\n{'-' * (len(header) + 24)}"


def format_rows(rows: list[Row], notes: list[str]) -> list[str]:
    """Table lines for `rows`; each row's note is appended to `notes` and marked [n]."""
    lines = []
    for row in rows:
        ratio = "-" if row.ratio is None else f"{row.ratio:.2f}x"
        name = row.anchor_name
        if row.note:
            if row.note not in notes:
                notes.append(row.note)
            name = f"{name} [{notes.index(row.note) + 1}]"
        lines.append(
            f"{row.what:<{WIDTH}} {fmt_value(row.ours, row.unit):>10} "
            f"{fmt_value(row.anchor, row.unit):>10} {ratio:>8} {row.target:>9}  "
            f"{verdict(row):<4} {name}"
        )
    return lines


@dataclass
class Section:
    """What one area measured: its rows, plus extra tables, JSON data and files it wrote."""

    title: str
    rows: list[Row]
    tables: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)


def print_sections(sections: list[Section]) -> None:
    """One table for every section's rows (a heading line per section), the notes, the extras."""
    notes: list[str] = []
    print(table_header())
    for section in sections:
        if section.rows:
            print(f"## {section.title}")
            print("\n".join(format_rows(section.rows, notes)))
    print(
        "\nratio: anchor/ours for a '>=' target (times less than the anchor), ours/anchor for "
        "'<=Nx',\n       ours/ideal for a time limit. met: n/a = the anchor is not installed."
    )
    if notes:
        print("\nnotes:")
        for index, note in enumerate(notes, 1):
            print(textwrap.fill(note, 100, initial_indent=f"[{index}] ", subsequent_indent="    "))
    for section in sections:
        for table in section.tables:
            print(f"\n{table}")
        for path in section.files:
            print(f"wrote {path}")

"""Run benchmark areas, print one table, write the results as JSON and plot the headline rows.

`python -m benchmarks` runs every area (see `benchmarks/__main__.py`); each area script runs its
own areas with the same options (`python benchmarks/bench_toolset.py --quick`). Each area runs in
a fresh process of its own (`benchmarks/worker.py`), as pyperf runs each benchmark: it starts
from its own imports, not from the modules, heap, caches and threads the areas before it left
(a full pass of the garbage collector walks every object alive, so another area's imports made
the concurrent-runs row 30% slower). `--same-process` runs them all in this one instead. The
machine's load is read before and after each area: when the 1-minute load is above the number
of usable CPUs, the area's verdicts read "load" (measured under load: not a verdict) instead of
yes/NO. A CPU reading (`cpu_reading`) is taken before and after each area too: a shared machine's
speed drifts from minute to minute without the load average showing it, and the rows whose
target is an absolute time move with it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pickle
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from benchmarks import report
from benchmarks.harness import PROCESS_ENV, RESULTS, Row, Section, Settings
from benchmarks.table import print_sections

Area = Callable[[Settings], Section]
"""An area's benchmark: measures with the given settings and returns its section."""

PACKAGES = (
    "jianmu-bt",
    "py_trees",
    "pydantic",
    "anyio",
    "PyYAML",
    "mcp",
    "langchain-core",
    "langgraph",
    "simpleeval",
    "matplotlib",
)


def installed(package: str) -> str:
    """The installed version of `package`, or 'not installed'."""
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def machine() -> dict[str, Any]:
    """What the numbers were measured on: Python, CPUs, load, and the package versions."""
    cpu = platform.processor() or platform.machine()
    model = Path("/proc/cpuinfo")
    if model.exists():
        names = [line for line in model.read_text().splitlines() if line.startswith("model name")]
        cpu = names[0].split(":", 1)[1].strip() if names else cpu
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "system": f"{platform.system()} {platform.release()}",
        "cpu": cpu,
        "cpus_usable": cpus(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "packages": {name: installed(name) for name in PACKAGES},
    }


def describe(info: dict[str, Any]) -> str:
    """One line about the machine for the top of the table."""
    packages = ", ".join(
        f"{name} {v}" for name, v in info["packages"].items() if v != "not installed"
    )
    return (
        f"Python {info['python']}, {info['cpus_usable']} CPUs ({info['cpu']}), load "
        f"{info['load_average'][0]:.2f}; {packages}"
    )


def parse(argv: Sequence[str] | None, areas: Mapping[str, Area], prog: str) -> argparse.Namespace:
    """The command line: --quick, --only NAMES, --out DIR."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Benchmarks of jianmu_bt side by side with their anchors, in one table.",
    )
    parser.add_argument("--quick", action="store_true", help="fewer repeats (less precise)")
    parser.add_argument(
        "--only",
        default="",
        metavar="NAMES",
        help=f"comma-separated areas to run, of: {', '.join(areas)}",
    )
    parser.add_argument(
        "--out", type=Path, default=RESULTS, help=f"folder for latest.json (default {RESULTS})"
    )
    parser.add_argument(
        "--same-process",
        action="store_true",
        help="run every area in this process, one after another (each weighs on the next)",
    )
    options = parser.parse_args(argv)
    chosen = [name.strip() for name in options.only.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in areas]
    if unknown:
        parser.error(f"unknown area(s) {', '.join(unknown)}: choose from {', '.join(areas)}")
    options.areas = chosen or list(areas)
    return options


def cpus() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


#: Additions in the CPU reading's loop: about 30 ms of pure-Python work on a quick minute here.
CPU_WORK = 1_000_000


def cpu_reading() -> float:
    """Milliseconds a fixed piece of pure-Python work takes now (lower: a quicker minute).

    On a shared machine the same loop took from 198 to 358 ms (3 million additions) within one
    afternoon at a load average near 1: neither the load nor the hypervisor's steal time showed
    it. Read before and after each area, it tells which absolute times met a slow minute.
    """
    start = time.perf_counter()
    total = 0
    for number in range(CPU_WORK):
        total += number
    return round((time.perf_counter() - start) * 1e3, 1)


def heavy(loads: Sequence[float], usable: int) -> float | None:
    """The highest 1-minute load of `loads` when it is above `usable` CPUs, else None."""
    worst = max(loads)
    return worst if worst > usable else None


def mark_load(section: Section, before: float, after: float) -> dict[str, float]:
    """Mark the section's verdicts when the machine was busy; the loads, for the JSON."""
    busy = heavy([before, after], cpus())
    for row in section.rows:
        if busy is not None and row.met is not None:
            row.load = round(busy, 2)
    return {"before": round(before, 2), "after": round(after, 2)}


#: The longest one area's process may take (the slowest takes about a minute).
AREA_TIMEOUT = 1800.0


def area_address(area: Area) -> tuple[str, str]:
    """The module and qualified name a fresh process imports `area` by."""
    module = area.__module__
    if module == "__main__":  # an area script run as `python benchmarks/bench_x.py`
        module = f"benchmarks.{Path(sys.modules['__main__'].__file__ or '').stem}"
    return module, area.__qualname__


def measure_apart(area: Area, settings: Settings) -> Section:
    """`area(settings)`, measured in a fresh process of its own (see the module's docstring)."""
    module, name = area_address(area)
    with tempfile.TemporaryDirectory(prefix="jianmu-bench-") as folder:
        request, result = Path(folder, "request.json"), Path(folder, "result.pickle")
        request.write_text(
            json.dumps(
                {
                    "module": module,
                    "name": name,
                    "quick": settings.quick,
                    "out": str(settings.out),
                    "sys_path": sys.path,
                    "result": str(result),
                }
            ),
            encoding="utf-8",
        )
        worker = Path(__file__).with_name("worker.py")
        done = subprocess.run(
            [sys.executable, str(worker), str(request)], env=PROCESS_ENV, timeout=AREA_TIMEOUT
        )
        if not result.exists():
            raise RuntimeError(f"the area's process ended with status {done.returncode}")
        outcome = pickle.loads(result.read_bytes())
    if "error" in outcome:
        raise RuntimeError(outcome["error"])
    return outcome["section"]


def run_area(name: str, area: Area, settings: Settings, apart: bool = True) -> Section:
    """One area's section, measured in a fresh process (`apart`) or in this one; an area that
    fails becomes a row saying why, not a crash."""
    before, cpu_before = os.getloadavg()[0], cpu_reading()
    try:
        section = measure_apart(area, settings) if apart else area(settings)
    except Exception as exc:  # one broken area must not hide the others' numbers
        if not apart:
            traceback.print_exc()  # (a process of its own has printed its traceback)
        reason = (str(exc) if apart else f"{type(exc).__name__}: {exc}").splitlines()[0][:200]
        row = Row(f"{name}: not measured", None, None, "-", None, "-", None, note=reason)
        section = Section(f"{name} (failed)", [row])
    for row in section.rows:
        row.area = name
    section.data["load"] = mark_load(section, before, os.getloadavg()[0])
    section.data["cpu_ms"] = {"before": cpu_before, "after": cpu_reading()}
    if not apart:
        gc.collect()  # the next area starts without this one's garbage
    return section


def write_json(path: Path, payload: dict[str, Any]) -> None:
    """Write the results (creating the folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")


def main(areas: Mapping[str, Area], argv: Sequence[str] | None = None, prog: str = "") -> int:
    """Run the chosen areas, print the table, write `<out>/latest.json` and the plot; 0."""
    options = parse(argv, areas, prog or Path(sys.argv[0]).name)
    settings = Settings(quick=options.quick, out=options.out)
    info = machine()
    print(describe(info))
    mode = "quick" if options.quick else "full"
    print(f"areas: {', '.join(options.areas)} ({mode} mode)\n", flush=True)
    started = time.perf_counter()
    sections = []
    for name in options.areas:
        print(f"measuring {name} ...", file=sys.stderr, flush=True)
        sections.append(run_area(name, areas[name], settings, not options.same_process))
    elapsed = time.perf_counter() - started
    print()
    print_sections(sections)
    cpu = report.cpu_readings(dict(zip(options.areas, (s.data for s in sections), strict=True)))
    if cpu:
        print(textwrap.fill(cpu, 100, subsequent_indent="    "))
    path = options.out / "latest.json"
    write_json(
        path,
        {
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "quick": options.quick,
            "areas": options.areas,
            "seconds": round(elapsed, 1),
            "machine": info,
            "load_average_end": [round(x, 2) for x in os.getloadavg()],
            "rows": [row.to_json() for section in sections for row in section.rows],
            "data": {name: s.data for name, s in zip(options.areas, sections, strict=True)},
        },
    )
    print(f"wrote {path} ({elapsed:.0f} s)")
    plotted = report.write_plot(path, report_path(options, areas))
    print(f"wrote {plotted}" if isinstance(plotted, Path) else f"no plot: {plotted}")
    return 0


def report_path(options: argparse.Namespace, areas: Mapping[str, Area]) -> Path:
    """Where the plot of the headline rows goes: benchmarks/report.png after a full run of every
    area into the default folder, else next to latest.json (trial, quick and partial runs leave
    the committed plot alone)."""
    whole = not options.quick and list(options.areas) == list(areas)
    if whole and options.out.resolve() == RESULTS.resolve():
        return report.REPORT
    return Path(options.out) / "report.png"

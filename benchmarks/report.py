"""The headline rows (the issue's "fast by default" table) as a plot and a Markdown table.

Each headline row of the results carries `headline`, a key of `HEADLINES`: what a user does,
what it measured before the work on fast defaults ("today"), and the target. The plot draws
every headline row as its score (how many times over the target is beaten, log scale: right of
the target line is met), with the p25-p75 spread, next to where it stood before.

    python -m benchmarks.report                      # benchmarks/results/latest.json -> report.png
    python -m benchmarks.report --markdown           # the table for docs/performance.md
    python -m benchmarks.report --out docs/performance-report.png
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPORT = HERE / "report.png"
LATEST = HERE / "results" / "latest.json"


@dataclass(frozen=True)
class Headline:
    """A row of the issue's table: what a user does, before, the target, the score before."""

    key: str
    what: str
    before: str
    target: str
    before_score: tuple[float, float] | None  # how far the "before" numbers were from the target


HEADLINES = (
    Headline(
        "toolset",
        "`@tool` plain sync function via ToolSet vs LangChain `@tool` invoke",
        "3.4-6x",
        ">= 10x",
        (0.34, 0.6),
    ),
    Headline(
        "batch_timeout",
        "10-call batch vs LangGraph ToolNode, per-call timeout set",
        "5-7x",
        ">= 10x",
        (0.5, 0.7),
    ),
    Headline(
        "batch_retries",
        "10-call batch vs LangGraph ToolNode, retries set",
        "5-7x",
        ">= 10x",
        (0.5, 0.7),
    ),
    Headline(
        "batch_busy",
        "same, on a busy machine (one other core kept busy)",
        "4.6x",
        ">= 10x",
        (0.46, 0.46),
    ),
    Headline(
        "tick10",
        "tick overhead, 10-node tree vs plain py_trees",
        "3.5-4.5x",
        "<= 1.25x",
        (0.28, 0.36),
    ),
    Headline(
        "tick100",
        "tick overhead, 100-node tree vs plain py_trees",
        "1.35-1.45x",
        "<= 1.25x",
        (0.86, 0.93),
    ),
    Headline(
        "fanout1000",
        "1,000 parallel calls of a 100 ms async tool, default settings",
        "1.6-2.2 s",
        "<= 0.3 s",
        (0.14, 0.19),
    ),
    Headline(
        "first_batch",
        "first batch in a fresh process (the batch itself)",
        "118-136 ms",
        "<= 20 ms",
        (0.15, 0.17),
    ),
    Headline("agent500", "500-turn scripted agent loop", "2.04 s", "<= 0.15 s", (0.074, 0.074)),
    Headline(
        "agent_linear",
        "agent loop: time per turn at 500 turns / at 100 turns",
        "-",
        "<= 1.5x (linear)",
        None,
    ),
    Headline(
        "history_memory",
        "long history: peak memory per turn, 450 turns / 100 turns",
        "O(n^2): 94 MiB by turn 450",
        "<= 1.5x (O(n))",
        None,
    ),
    Headline(
        "yaml_load",
        "YAML load of a 10,000-node tree, per node",
        "146-294 us",
        "<= 60 us",
        (0.2, 0.41),
    ),
    Headline(
        "yaml_linear", "YAML load per node, 10,000 nodes / 100 nodes", "-", "<= 1.5x (linear)", None
    ),
    Headline("tree_memory", "loaded tree memory per node", "5 KiB", "<= 1.5 KiB", (0.3, 0.3)),
    Headline(
        "runs_time",
        "10,000 concurrent small runs in one process: time",
        "7-13 s",
        "<= 2 s",
        (0.15, 0.29),
    ),
    Headline(
        "runs_memory",
        "10,000 concurrent small runs: memory per run",
        "25 KiB",
        "<= 8 KiB",
        (0.32, 0.32),
    ),
    Headline("import", "`import jianmu_bt` vs `import py_trees`", "282-366 ms", "<= 1.5x", None),
    Headline(
        "validate",
        "`jianmu validate` of a small tree (a fresh process)",
        "740-850 ms",
        "<= 300 ms",
        (0.35, 0.41),
    ),
)


def load(path: Path) -> dict[str, Any]:
    """The results JSON written by the suite."""
    return dict(json.loads(path.read_text(encoding="utf-8")))


def headline_rows(results: dict[str, Any]) -> list[tuple[Headline, dict[str, Any] | None]]:
    """Every headline, with its measured row (None when its area was not run)."""
    rows = {row["headline"]: row for row in results["rows"] if row.get("headline")}
    return [(h, rows.get(h.key)) for h in HEADLINES]


def spread_scores(row: dict[str, Any]) -> tuple[float, float] | None:
    """The p25-p75 spread of a row as scores (the score moves with the ratio for '>=' targets,
    against the ratio or the value for the others)."""
    center = row["ratio"] if row["ratio"] is not None else row["ours"]
    if not row.get("spread") or not row.get("score") or not center:
        return None
    ends = [
        row["score"] * (x / center if row["target"].startswith(">=") else center / x)
        for x in row["spread"]
    ]
    return min(ends), max(ends)


def measured(row: dict[str, Any] | None) -> str:
    """A row's measure as text: the ratio for compared rows, else the value."""
    from benchmarks.harness import fmt_value

    if row is None:
        return "not measured"
    if row["ratio"] is not None and row["anchor_name"] != "ideal":
        return f"{row['ratio']:.2f}x"
    return fmt_value(row["ours"], row["unit"])


def markdown(results: dict[str, Any]) -> str:
    """The issue's table with the measured column: before, target, measured, verdict."""
    lines = [
        "| what a user does | before | target | measured | met |",
        "|---|---|---|---|---|",
    ]
    for headline, row in headline_rows(results):
        verdict = "-" if row is None else row["verdict"]
        if verdict == "load":  # not a verdict, but say which side of the target it fell
            verdict = f"load (read {'yes' if row and row['met'] else 'NO'})"
        value = measured(row)
        if row and row.get("spread") and row["ratio"] is not None and row["anchor_name"] != "ideal":
            value += f" ({row['spread'][0]:.2f}-{row['spread'][1]:.2f})"
        lines.append(
            f"| {headline.what} | {headline.before} | {headline.target} | {value} | {verdict} |"
        )
    cpu = cpu_readings(results.get("data", {}))
    if cpu:
        lines.append(f"\n{cpu}.")
    return "\n".join(lines)


def cpu_readings(data: Mapping[str, Mapping[str, Any]]) -> str:
    """The CPU readings around each area (`suite.cpu_reading`) in one line; '' when none."""
    readings = [
        f"{name} {cpu['before']:.0f}/{cpu['after']:.0f}"
        for name, area in data.items()
        if (cpu := area.get("cpu_ms"))
    ]
    if not readings:
        return ""
    return "CPU reading, ms of a fixed loop before/after each area (lower: quicker): " + ", ".join(
        readings
    )


def plot(results: dict[str, Any], path: Path) -> Path:
    """Draw the headline rows' scores next to the target line and the "before" scores."""
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    pairs = [(h, row) for h, row in headline_rows(results) if row and row.get("score")]
    fig, ax = plt.subplots(figsize=(11, 0.45 * len(pairs) + 2.2), constrained_layout=True)
    for y, (headline, row) in enumerate(pairs):
        colour = "tab:green" if row["met"] else "tab:red"
        loaded = row["verdict"] == "load"  # hatched: measured under load, not a verdict
        ax.barh(
            y,
            row["score"],
            color=colour,
            alpha=0.4 if loaded else 0.75,
            height=0.6,
            hatch="//" if loaded else None,
            edgecolor="dimgrey" if loaded else colour,
        )
        spread = spread_scores(row)
        if spread:
            ax.plot(spread, [y, y], color="black", linewidth=1.5)
        if headline.before_score:
            low, high = headline.before_score
            ax.plot(
                [low, high], [y, y], color="dimgrey", linewidth=5, alpha=0.6, solid_capstyle="round"
            )
        right = max(row["score"], spread[1] if spread else 0, 1) * 1.08
        ax.annotate(f"{measured(row)} ({row['target']})", (right, y), va="center", fontsize=8)
    ax.axvline(1, color="black", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(pairs)), [h.what.replace("`", "") for h, _ in pairs], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(0.03, 100)
    ax.set_xlabel("times over the target (right of the dashed line: met; grey: before)")
    machine = results.get("machine", {})
    mode = "quick" if results.get("quick") else "full"
    ax.set_title(
        f"Fast by default: headline rows, {results.get('created', '')[:10]}, {mode} run, "
        f"{machine.get('cpus_usable', '?')} CPUs, load {machine.get('load_average', ['?'])[0]}"
        "\n(bar: median, green met, red not; hatched: measured under load, not a verdict; "
        "black: p25-p75)",
        fontsize=10,
    )
    ax.grid(True, axis="x", which="both", alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def write_plot(results_path: Path, path: Path) -> Path | str:
    """Plot the results at `results_path` to `path`; the reason instead when it cannot."""
    from benchmarks.harness import optional

    _, missing = optional("matplotlib")
    if missing:
        return missing
    return plot(load(results_path), path)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m benchmarks.report [--results JSON] [--out PNG] [--markdown]`."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__)
    parser.add_argument("--results", type=Path, default=LATEST, help=f"default {LATEST}")
    parser.add_argument("--out", type=Path, default=REPORT, help=f"default {REPORT}")
    parser.add_argument("--markdown", action="store_true", help="print the table, no plot")
    options = parser.parse_args(argv)
    if options.markdown:
        print(markdown(load(options.results)))
        return 0
    print(f"wrote {write_plot(options.results, options.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The Cost figures of docs/durability.md, generated from the durable-steps results file.

`python -m benchmarks --only durable_steps --out benchmarks/figures/durability` measures and
writes `benchmarks/figures/durability/latest.json`; `python -m benchmarks.durability_docs` then
rewrites the figures block of docs/durability.md from it (`tests/durable/test_durability_figures.py`
checks that the two agree).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.docs_figures import END, begin_marker, measured, replace_block

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "figures" / "durability" / "latest.json"
DOC = ROOT / "docs" / "durability.md"
BEGIN = begin_marker("durability_docs")
AREA = "durable_steps"
SIZES = ("100", "1,000", "10,000")


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} µs"


def _row(rows: list[dict[str, Any]], starts: str) -> dict[str, Any]:
    found = [row for row in rows if row["what"].strip().startswith(starts)]
    if not found:
        raise ValueError(f"the results file has no row '{starts}...' of the {AREA} area")
    return found[0]


def _met(row: dict[str, Any]) -> str:
    verdict = row.get("verdict")
    if verdict == "load":  # measured under load: not a verdict, but say what it read
        return f"measured under load (read {'met' if row.get('met') else 'NOT met'})"
    return "met" if verdict == "yes" else "NOT met"


def figures(results: dict[str, Any]) -> str:
    """The markdown of the figures block for `results` (a results file's JSON)."""
    rows = [row for row in results["rows"] if row.get("area") == AREA]
    lines = [
        BEGIN,
        "",
        f"{measured(results, AREA)}:",
        "",
        "| steps | per-step overhead (SQLite) | target | store bytes per step |",
        "|---|---|---|---|",
    ]
    for size in SIZES:
        step = _row(rows, f"durable no-op step overhead, {size} steps (SQLite)")
        stored = _row(rows, f"store bytes per step, {size} steps")
        target = step["target"].replace("<=", "≤ ").replace(" us", " µs")
        lines.append(
            f"| {size} | {_us(step['ours'])} | {target}: {_met(step)} | {stored['ours']:.0f} B |"
        )
    flat = _row(rows, "flat: overhead at 10,000 steps")
    versus = _row(rows, "per-step overhead vs LangGraph")
    effectful = _row(rows, "the same step taken as side-effecting")
    postgres = _row(rows, "durable no-op step overhead, 1,000 steps (PostgreSQL")
    lines += [
        "",
        f"- flat: the overhead at 10,000 steps is {flat['ratio']:.2f}x the one at 100 "
        f"(target {flat['target'].replace('<=', '≤ ')}: {_met(flat)});",
        f"- LangGraph with `SqliteSaver` (a chain of 1,000 no-op nodes, its defaults) costs "
        f"{versus['anchor'] * 1e3:.2f} ms a step: ours is {versus['ratio']:.2f}x of it (target "
        f"{versus['target'].replace('<=', '≤ ')}: {_met(versus)});",
        f"- the same no-op declaring nothing (so taken as side-effecting: a `running` row "
        f"committed before it, its outcome committed after): {_us(effectful['ours'])} a step at "
        "1,000 steps, nearly all of it the two commits;",
        f"- PostgreSQL (a local throwaway server, fsync off): {_us(postgres['ours'])} a step at "
        "1,000 steps (reported).",
        "",
        END,
    ]
    return "\n".join(lines)


def update(doc: Path = DOC, results_path: Path = RESULTS) -> None:
    """Rewrite the figures block of `doc` from `results_path`."""
    replace_block(doc, BEGIN, figures(json.loads(results_path.read_text(encoding="utf-8"))))


if __name__ == "__main__":
    update(*(Path(arg) for arg in sys.argv[1:3]))
    print(f"updated {DOC if len(sys.argv) < 2 else sys.argv[1]}")

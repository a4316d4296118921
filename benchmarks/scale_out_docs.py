"""The figures of docs/scale-out.md, generated from the batch benchmark's results file.

`python -m benchmarks --only batch_runs --out benchmarks/figures/scale-out` measures and writes
`benchmarks/figures/scale-out/latest.json`; `python -m benchmarks.scale_out_docs` then rewrites
the table between the `figures` markers of docs/scale-out.md from that file (a test checks that
the two agree, so the docs never show a figure the results file does not hold).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from benchmarks.docs_figures import (
    END,
    begin_marker,
    block as figures_block,
    measured,
    replace_block,
)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "figures" / "scale-out" / "latest.json"
DOC = ROOT / "docs" / "scale-out.md"
BEGIN = begin_marker("scale_out_docs")
AREA = "batch_runs"


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.2f} ms"


def figures(results: dict[str, Any]) -> str:
    """The markdown of the figures block for `results` (a results file's JSON)."""
    rows = [row for row in results["rows"] if row.get("area") == AREA]
    if not rows:
        raise ValueError(f"the results file has no rows of the {AREA} area")
    data = results.get("data", {}).get(AREA, {})
    lines = [
        BEGIN,
        "",
        f"{measured(results, AREA)}; {data.get('runs', '?')} runs a batch, medians of "
        f"{data.get('rounds', '?')} rounds; per run after start-up (first result to last):",
        "",
        "| measure | per run or call | against | ratio | target | met |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        ratio = "-" if row.get("ratio") is None else f"{row['ratio']:.2f}x"
        note = f" ({row['note']})" if row.get("note") else ""
        against = row.get("anchor_name") or "-"
        verdict = row.get("verdict", "-")
        if verdict == "load":  # measured under load: not a verdict, but say what it read
            verdict = f"load (read {'yes' if row.get('met') else 'NO'})"
        lines.append(
            f"| {row['what']}{note} | {_ms(row.get('ours'))} | {against} | {ratio} "
            f"| {row.get('target', '-')} | {verdict} |"
        )
    lines += ["", END]
    return "\n".join(lines)


def block(text: str) -> str:
    """The figures block of a document's text (markers included)."""
    return figures_block(text, BEGIN)


def update(doc: Path = DOC, results_path: Path = RESULTS) -> None:
    """Rewrite the figures block of `doc` from `results_path`, and copy the run's plot
    (`batch_runs.png` beside the results file) to the docs' `scale-out-scaling.png`."""
    replace_block(doc, BEGIN, figures(json.loads(results_path.read_text(encoding="utf-8"))))
    plot = results_path.with_name("batch_runs.png")
    if plot.exists():
        shutil.copyfile(plot, doc.with_name("scale-out-scaling.png"))


if __name__ == "__main__":
    update(*(Path(arg) for arg in sys.argv[1:3]))
    print(f"updated {DOC if len(sys.argv) < 2 else sys.argv[1]}")

"""docs/scale-out.md shows the batch benchmark's figures exactly as its results file holds them."""

from __future__ import annotations

import json

from benchmarks.scale_out_docs import DOC, RESULTS, block, figures


def test_the_scale_out_figures_are_generated_from_the_results_file():
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    assert block(DOC.read_text(encoding="utf-8")) == figures(results), (
        "docs/scale-out.md and benchmarks/figures/scale-out/latest.json disagree: run "
        "python -m benchmarks.scale_out_docs"
    )


def test_the_figures_name_every_contender_with_its_ratio_and_target():
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    table = figures(results)
    for row in results["rows"]:
        if row.get("area") == "batch_runs" and row.get("ratio") is not None:
            assert f"{row['ratio']:.2f}x | {row['target']}" in table
    assert "multiprocessing.Pool(2)" in table and "Ray, 2 CPUs" in table

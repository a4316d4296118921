"""docs/durability.md shows the durable-steps benchmark's figures exactly as its results file
(committed under benchmarks/figures/durability/) holds them."""

from __future__ import annotations

import json

from benchmarks.docs_figures import block
from benchmarks.durability_docs import BEGIN, DOC, RESULTS, figures


def test_the_cost_figures_are_generated_from_the_results_file():
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    assert block(DOC.read_text(encoding="utf-8"), BEGIN) == figures(results), (
        "docs/durability.md and benchmarks/figures/durability/latest.json disagree: run "
        "python -m benchmarks.durability_docs"
    )


def test_every_target_row_of_the_results_is_on_the_page():
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    table = figures(results)
    for row in results["rows"]:
        if row.get("area") == "durable_steps" and row.get("ratio") is not None:
            assert f"{row['ratio']:.2f}x" in table

"""`python -m benchmarks [--quick] [--only NAMES] [--out DIR]`: every benchmark, one table.

Run from the repository root (`pip install -e ".[bench]"` installs the anchors). Areas, in the
order of the table: toolset, batch, batch_runs, ticks, agent, agent_turn, fanout, startup, loader,
memory, imports, calculator, mcp, mcp_startup, llm_providers, idle, durability, durable_steps,
runners, scaling.
`python -m benchmarks.report` plots the headline rows (benchmarks/report.png, also written by
every run) and prints their table.
"""

from __future__ import annotations

import sys

from benchmarks import (
    bench_agent,
    bench_agent_turn,
    bench_batch,
    bench_batch_runs,
    bench_calculator,
    bench_durability,
    bench_durable_steps,
    bench_import,
    bench_llm_providers,
    bench_loader,
    bench_mcp,
    bench_mcp_startup,
    bench_memory,
    bench_runners,
    bench_runtime,
    bench_scaling,
    bench_startup,
    bench_ticks,
    bench_toolset,
)
from benchmarks.suite import main

AREAS = {
    **bench_toolset.AREAS,
    **bench_batch.AREAS,
    **bench_batch_runs.AREAS,
    **bench_ticks.AREAS,
    **bench_agent.AREAS,
    **bench_agent_turn.AREAS,
    "fanout": bench_runtime.fanout,
    **bench_startup.AREAS,
    **bench_loader.AREAS,
    **bench_memory.AREAS,
    **bench_import.AREAS,
    **bench_calculator.AREAS,
    **bench_mcp.AREAS,
    **bench_mcp_startup.AREAS,
    **bench_llm_providers.AREAS,
    "idle": bench_runtime.idle,
    **bench_durability.AREAS,
    **bench_durable_steps.AREAS,
    **bench_runners.AREAS,
    **bench_scaling.AREAS,
}
assert AREAS.keys() >= bench_runtime.AREAS.keys()  # every runtime area is in the suite

if __name__ == "__main__":
    sys.exit(main(AREAS, prog="python -m benchmarks"))

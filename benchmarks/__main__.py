"""`python -m benchmarks [--quick] [--only NAMES] [--out DIR]`: every benchmark, one table.

Run from the repository root (`pip install -e ".[bench]"` installs the anchors). Areas, in the
order of the table: toolset, batch, ticks, loader, calculator, mcp, fanout, idle, durability,
memory, runners, scaling, imports.
"""

from __future__ import annotations

import sys

from benchmarks import (
    bench_calculator,
    bench_durability,
    bench_import,
    bench_loader,
    bench_mcp,
    bench_memory,
    bench_runners,
    bench_runtime,
    bench_scaling,
    bench_toolset,
)
from benchmarks.suite import main

AREAS = {
    **bench_toolset.AREAS,
    "batch": bench_runtime.batch,
    "ticks": bench_runtime.ticks,
    **bench_loader.AREAS,
    **bench_calculator.AREAS,
    **bench_mcp.AREAS,
    "fanout": bench_runtime.fanout,
    "idle": bench_runtime.idle,
    **bench_durability.AREAS,
    **bench_memory.AREAS,
    **bench_runners.AREAS,
    **bench_scaling.AREAS,
    **bench_import.AREAS,
}
assert AREAS.keys() >= bench_runtime.AREAS.keys()  # every runtime area is in the suite

if __name__ == "__main__":
    sys.exit(main(AREAS, prog="python -m benchmarks"))

"""Batch runs: one durable run of a tree per input line, on a local process pool or on Ray.

`run_batch(tree, inputs, out=...)` is what `jianmu batch` runs; see docs/scale-out.md. Each
name is imported from its module on first use (`jianmu_bt._lazy`): Ray loads only with `--ray`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jianmu_bt._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see
    from jianmu_bt.batch.driver import (
        BatchError as BatchError,
        BatchSummary as BatchSummary,
        batch_id_for as batch_id_for,
        batch_run_id as batch_run_id,
        run_batch as run_batch,
    )
    from jianmu_bt.batch.inputs import InputChecker as InputChecker, InputLine as InputLine
    from jianmu_bt.batch.worker import WorkerSpec as WorkerSpec, run_line as run_line


__getattr__, __dir__ = lazy_exports(__name__, globals())

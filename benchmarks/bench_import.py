"""Import cost in a fresh interpreter: `import jianmu_bt` next to `import py_trees`.

Each statement runs in a new `python -X importtime -c ...` process (several rounds, interleaved,
medians); its cost is the sum of the cumulative times `-X importtime` reports for the modules the
statement imports (the interpreter's own start-up imports are left out). The rows: the package
root (lazy, PEP 562: target at most 1.5x `import py_trees`), the tool layer through the root
(`from jianmu_bt import ToolSet, tool`), the loader (`import jianmu_bt.loader`), and the sandbox
worker's start (its bootstrap as LocalSandbox runs it, without serving). Only the first row has a
target; the others show what each entry point pays, as a ratio to py_trees.

Run: python benchmarks/bench_import.py [--quick]
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import PROCESS_ENV, Row, Section, Settings, interleave, within
from benchmarks.suite import main
from jianmu_bt.sandbox.worker import BOOTSTRAP

#: Written to stderr just before the measured statement; the import lines after it count.
MARK = "@@measured"
#: A top-level line of `-X importtime`: "import time: <self> | <cumulative> | <module>".
_TOP_LEVEL = re.compile(r"^import time:\s+\d+ \|\s+(\d+) \| (\S.*)$")

ANCHOR = "import py_trees"
#: What each row runs: (label, statement, target as a multiple of the anchor or None).
STATEMENTS: list[tuple[str, str, float | None]] = [
    ("import jianmu_bt", "import jianmu_bt", 1.5),
    ("from jianmu_bt import ToolSet, tool", "from jianmu_bt import ToolSet, tool", None),
    ("import jianmu_bt.loader", "import jianmu_bt.loader", None),
]
WORKER = "sandbox worker start (python -I -B, its imports)"
#: The worker's bootstrap up to (not including) the `main()` that would serve requests.
WORKER_IMPORT = BOOTSTRAP.rsplit(";", 1)[0]
assert BOOTSTRAP.endswith("; main()"), BOOTSTRAP


def import_seconds(statement: str, flags: Sequence[str] = (), args: Sequence[str] = ()) -> float:
    """Seconds `-X importtime` reports for the imports of `statement`, run in a fresh process as
    `python -X importtime <flags> -c <statement> <args>`."""
    code = f"import sys; sys.stderr.write({MARK!r} + '\\n'); sys.stderr.flush(); {statement}"
    command = [sys.executable, "-X", "importtime", *flags, "-c", code, *args]
    done = subprocess.run(
        command, env=PROCESS_ENV, capture_output=True, text=True, timeout=120, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{statement!r} failed: {done.stderr.strip().splitlines()[-1:]}")
    lines = done.stderr.splitlines()
    measured = lines[lines.index(MARK) + 1 :]
    micros = sum(int(m.group(1)) for line in measured if (m := _TOP_LEVEL.match(line)))
    return micros / 1e6


def sampler(
    statement: str, flags: Sequence[str] = (), args: Sequence[str] = ()
) -> Callable[[], float]:
    """A sampler for `interleave`: one fresh process per sample."""
    return lambda: import_seconds(statement, flags, args)


def imports(settings: Settings) -> Section:
    """`import jianmu_bt` and the other entry points next to `import py_trees`."""
    samplers = {ANCHOR: sampler(ANCHOR)}
    samplers.update({label: sampler(statement) for label, statement, _ in STATEMENTS})
    # As LocalSandbox starts it: isolated mode, no bytecode written, the parent's import path.
    samplers[WORKER] = sampler(WORKER_IMPORT, ["-I", "-B"], [json.dumps(sys.path)])
    t = interleave(samplers, settings.pick(11, 3), warmup=settings.pick(2, 1))
    rows: list[Row] = [
        within(label, t[label], t[ANCHOR], ANCHOR, target, headline="import" if target else "")
        for label, _, target in STATEMENTS
    ]
    note = (
        "The worker's bootstrap (jianmu_bt.sandbox.worker.BOOTSTRAP) up to serving: what each "
        "fresh LocalSandbox worker process pays in imports before its first call."
    )
    rows.append(within(WORKER, t[WORKER], t[ANCHOR], ANCHOR, None, note=note))
    return Section("Import cost in a fresh interpreter (ratio ours / import py_trees)", rows)


AREAS = {"imports": imports}

if __name__ == "__main__":
    sys.exit(main(AREAS))

"""Start-up as a user meets it, each sample in a fresh process: the first batch, `jianmu validate`.

- first batch: a script imports jianmu_bt's tool, node and runtime layers, defines a plain sync
  `@tool`, writes 10 calls to state and runs a `ToolExecutor` through `TreeRunner.run()`. The
  script times itself: from the import to the first batch's results (context), and the batch
  itself, from after the tool's definition to its results (target at most 20 ms): whatever the
  first batch has to start or import on first use counts.
- `jianmu validate trees/quickstart.yaml`: the wall time of the whole command, run as
  `python -m jianmu_bt.cli validate ...` from the repository root (the console script's code path,
  and surely this checkout's code). Target: at most 300 ms.
- `python -c pass`: the interpreter's own start, for context.

Run: python benchmarks/bench_startup.py [--quick]
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import PROCESS_ENV, Section, Settings, interleave, limit
from benchmarks.suite import main

ROOT = Path(__file__).resolve().parents[1]
FIRST_BATCH = """\
import json, time
start = time.perf_counter()
from jianmu_bt import tool
from jianmu_bt.nodes import ToolExecutor
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner
imported = time.perf_counter()

@tool
def echo(x: int) -> int:
    \"\"\"Return x.\"\"\"
    return x

defined = time.perf_counter()
state = StateManager(AgentState)
state.set("actions", [{"name": "echo", "arguments": {"x": i}} for i in range(10)])
result = TreeRunner(ToolExecutor([echo]), state).run()
done = time.perf_counter()
assert result.ok and len(result.state["messages"]) == 10, result.reason
print(json.dumps({"total": done - start, "imports": imported - start, "batch": done - defined}))
"""


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    """Run `command` from the repository root; its failure is the benchmark's failure."""
    done = subprocess.run(
        command, cwd=ROOT, env=PROCESS_ENV, capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise RuntimeError(f"{command} failed: {(done.stderr or done.stdout).strip()[-300:]}")
    return done


def startup(settings: Settings) -> Section:
    """The first batch in a fresh process and `jianmu validate`, next to the interpreter start."""
    parts: dict[str, list[float]] = {"total": [], "imports": []}

    def first_batch() -> float:
        times = json.loads(run([sys.executable, "-c", FIRST_BATCH]).stdout)
        for name in parts:
            parts[name].append(times[name])
        return float(times["batch"])

    def wall(command: list[str]) -> float:
        start = time.perf_counter()
        run(command)
        return time.perf_counter() - start

    validate = [sys.executable, "-m", "jianmu_bt.cli", "validate", "trees/quickstart.yaml"]
    rounds, warmup = settings.pick(9, 3), 1
    t = interleave(
        {
            "batch": first_batch,
            "validate": lambda: wall(validate),
            "python": lambda: wall([sys.executable, "-c", "pass"]),
        },
        rounds,
        warmup,
    )
    measured = {name: values[warmup:] for name, values in parts.items()}
    return Section(
        "Start-up in a fresh process (wall times; each sample a new process)",
        [
            limit(
                "first batch of 10 sync calls: TreeRunner.run()",
                t["batch"],
                0.02,
                note="from after the @tool definition to the results, in a fresh process: what the "
                "first batch starts or imports on first use counts",
                headline="first_batch",
            ),
            limit("  from the first import to the batch's results", measured["total"], None),
            limit("  of which the imports", measured["imports"], None),
            limit(
                "jianmu validate trees/quickstart.yaml",
                t["validate"],
                0.3,
                note="the whole command, interpreter start included",
                headline="validate",
            ),
            limit("  python -c pass (the interpreter's start)", t["python"], None),
        ],
    )


AREAS = {"startup": startup}

if __name__ == "__main__":
    sys.exit(main(AREAS))

"""Running `jianmu` on the durable test trees, and reading their ledger and run store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
TREES = Path(__file__).with_name("trees")
PIPELINE = TREES / "pipeline.yaml"
APPROVALS = TREES / "approvals.yaml"
PIPELINE_STEPS = ["a", "b", "c", "p1", "p2", "p3", "s4", "z"]


def cli_env(ledger: Path, delay: float = 0.0) -> dict[str, str]:
    """The environment of a `jianmu` process writing to `ledger`."""
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "JIANMU_LEDGER": str(ledger),
        "JIANMU_STEP_DELAY": str(delay),
        "TERM": "dumb",
    }


def command(*args: Any) -> list[str]:
    """The argv of `python -m jianmu_bt.cli ARGS`."""
    return [sys.executable, "-m", "jianmu_bt.cli", *map(str, args)]


def jianmu(*args: Any, env: dict[str, str], cwd: Path, timeout: float = 60) -> Any:
    """Run `jianmu ARGS` to its end, output captured."""
    return subprocess.run(
        command(*args), env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def start(*args: Any, env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    """Start `jianmu ARGS` without waiting (output discarded)."""
    return subprocess.Popen(
        command(*args),
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def ledger_names(ledger: Path) -> Counter[str]:
    """How many times each step wrote the ledger (the first word of each line)."""
    if not ledger.exists():
        return Counter()
    return Counter(line.split()[0] for line in ledger.read_text().splitlines() if line.strip())


def show(store: Any, run_id: str, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """What `jianmu runs show RUN --json` prints, read in this process (no process to start);
    `show_cli` runs the command itself."""
    from jianmu_bt.cli.runs_command import run_document
    from jianmu_bt.store import open_store

    with open_store(store, create=False) as opened:
        return json.loads(json.dumps(run_document(opened, run_id), default=str))


def show_cli(store: Any, run_id: str, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """`jianmu runs show RUN --store STORE --json`."""
    result = jianmu("runs", "show", run_id, "--store", store, "--json", env=env, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def wait_for(predicate: Any, timeout: float = 30.0, interval: float = 0.002) -> bool:
    """Poll `predicate()` until it is true (True) or `timeout` passes (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False

"""Tools with side effects that tests can count: each writes one line to a ledger file.

The ledger is the file named by JIANMU_LEDGER; JIANMU_STEP_DELAY (seconds) makes each step take
a while, so a test can kill the process in the middle of one. JIANMU_STEP_GATE names a file each
step waits for, so a test can hold a process inside a step until it creates the file.
"""

import os
import time
from typing import Annotated

from jianmu_bt import tool
from jianmu_bt.tools import Injected


def write_line(line: str) -> None:
    """Append `line` to the ledger (JIANMU_LEDGER), synced to disk."""
    fd = os.open(os.environ["JIANMU_LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def _lines() -> list[str]:
    try:
        with open(os.environ["JIANMU_LEDGER"]) as ledger:
            return ledger.read().splitlines()
    except FileNotFoundError:
        return []


def pause_at_gate() -> None:
    """Wait JIANMU_STEP_DELAY seconds, then until the file JIANMU_STEP_GATE names exists."""
    delay = float(os.environ.get("JIANMU_STEP_DELAY", "0"))
    if delay:
        time.sleep(delay)
    gate = os.environ.get("JIANMU_STEP_GATE")
    deadline = time.monotonic() + 120  # a hang guard should the test never open the gate
    while gate and not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.01)


@tool(effect_tags=["ledger"])
def step(name: str) -> str:
    """Write `name` to the ledger (a side effect that is not idempotent)."""
    pause_at_gate()
    write_line(name)
    return f"wrote {name}"


@tool(effect_tags=["ledger"], idempotent=True)
def idem_step(name: str, idempotency_key: Annotated[str, Injected]) -> str:
    """Write `name` to the ledger once per idempotency key (safe to run again)."""
    pause_at_gate()
    if any(line.endswith(f" {idempotency_key}") for line in _lines()):
        return f"already wrote {name}"
    write_line(f"{name} {idempotency_key}")
    return f"wrote {name}"


@tool(effect_tags=["deploy"])
def deploy(target: str) -> str:
    """Deploy to `target` (held for approval by the trees' guard)."""
    pause_at_gate()
    write_line(f"deploy-{target}")
    return f"deployed {target}"


@tool(read_only=True)
def lookup(term: str) -> str:
    """Look something up (no side effects: declared read-only, so it may run again)."""
    return f"found {term}"


@tool(effect_tags=["ledger"])
def crash_once(name: str) -> str:
    """Write `name` to the ledger; the first time, the process dies right after (as kill -9)."""
    write_line(name)
    marker = os.environ["JIANMU_LEDGER"] + ".crashed"
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(137)
    return f"wrote {name}"

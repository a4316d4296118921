"""Python tools for the unknown-effects tests: each writes one ledger line when it runs, before it
waits at the gate (so the effect has happened when a test kills the run in the middle of it).

The ledger is the file named by JIANMU_LEDGER; JIANMU_STEP_GATE names a file each call waits for
(see ledger_tools.py).
"""

import os
import time

from jianmu_bt import tool


def _record_then_wait(line: str) -> None:
    fd = os.open(os.environ["JIANMU_LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    gate = os.environ.get("JIANMU_STEP_GATE")
    deadline = time.monotonic() + 120  # a hang guard should the test never open the gate
    while gate and not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.01)


@tool
def charge(name: str) -> str:
    """Charge `name` (a plain tool: it declares neither effect tags nor read_only)."""
    _record_then_wait(f"charge {name}")
    return f"charged {name}"


@tool(read_only=True)
def peek(name: str) -> str:
    """Look at `name` (declared read-only: safe to run again; the ledger counts its runs)."""
    _record_then_wait(f"peek {name}")
    return f"saw {name}"

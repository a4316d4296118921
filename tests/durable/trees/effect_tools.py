"""Python tools for the unknown-effects tests: each writes one ledger line when it runs, before it
waits at the gate (so the effect has happened when a test kills the run in the middle of it).

The ledger is the file named by JIANMU_LEDGER; JIANMU_STEP_GATE names a file each call waits for
(see ledger_tools.py).
"""

from ledger_tools import pause_at_gate, write_line

from jianmu_bt import tool


def _record_then_wait(line: str) -> None:
    write_line(line)
    pause_at_gate()


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

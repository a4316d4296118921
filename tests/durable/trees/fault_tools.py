"""Tools that bring a fault on the process running them, for the fault-injection tests.

`fill_disk` writes its ledger line, then sets the process's file size limit to zero bytes: from
then on every write that would grow a file fails (EFBIG; Python ignores SIGXFSZ), as on a full
disk — the run store's next write included.
"""

import resource

from ledger_tools import write_line

from jianmu_bt import tool


@tool(effect_tags=["ledger"])
def fill_disk(name: str) -> str:
    """Write `name` to the ledger, then make every later file write of this process fail."""
    write_line(name)
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, hard))
    return f"wrote {name}; the disk is full now"

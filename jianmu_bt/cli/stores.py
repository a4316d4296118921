"""Opening the run store from the command line, and its errors as one-line messages."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from jianmu_bt.cli.errors import CLIError

if TYPE_CHECKING:
    from jianmu_bt.store import JournalEntry, RunStore

STORE_HELP = (
    "the run store: an SQLite file or a postgresql:// URL (default: $JIANMU_STORE, else "
    ".jianmu/runs.db under the current directory)"
)
#: The statuses of calls that wait for a decision (`--approve`, `--deny`).
WAITING = ("held", "in_doubt")
EXIT_STORE_FAULT = 75
"""The exit status of a run stopped by its store (sysexits' EX_TEMPFAIL: try again later)."""


def open_run_store(location: str | None, *, create: bool) -> RunStore:
    """The run store at `location` (default `$JIANMU_STORE`, else .jianmu/runs.db); CLIError
    when it cannot open."""
    from jianmu_bt.store import default_store, open_store

    with store_errors():
        return open_store(location or default_store(), create=create)


@contextlib.contextmanager
def store_errors() -> Iterator[None]:
    """Turn run store and durable-run errors into CLIError (one line): exit 75 when the store
    failed or is unavailable (try again later), else 1."""
    from jianmu_bt.runtime.durable import DurableRunError
    from jianmu_bt.runtime.journal import StoreFaultError
    from jianmu_bt.store import StoreError, StoreUnavailableError

    try:
        yield
    except (StoreFaultError, StoreUnavailableError) as exc:
        raise CLIError(str(exc), exit_code=EXIT_STORE_FAULT) from None
    except (StoreError, DurableRunError) as exc:
        raise CLIError(str(exc)) from None


def waiting_statuses() -> tuple[str, ...]:
    """The journal statuses of steps that wait: for a decision (`WAITING`), or for a value from
    outside (`waiting`: a question, an external call)."""
    # Imported here: the parser of a command that imports this module loads no runtime layer.
    from jianmu_bt.runtime.outside import WAITING as OUTSIDE

    return (*WAITING, OUTSIDE)


def waiting_calls(store: RunStore, run_id: str) -> list[JournalEntry]:
    """The run's steps that wait, in journal order: calls held or in doubt (for a decision),
    questions and external calls (`waiting`, for a value from outside)."""
    statuses = waiting_statuses()
    return [
        entry
        for entry in store.journal(run_id)
        if entry.status in statuses and entry.kind == "tool"
    ]

"""Errors of the run store. Each message is one line naming the store and what is wrong.

Every error is constructed from its message alone (extra details are keyword-only attributes), so
errors survive pickling between processes.
"""

from __future__ import annotations

__all__ = [
    "CheckpointNotFoundError",
    "LeaseError",
    "LeaseLostError",
    "RunExistsError",
    "RunNotFoundError",
    "StoreCorruptError",
    "StoreError",
    "StoreFormatError",
    "StoreLockedError",
    "StoreNotFoundError",
    "StoreUnavailableError",
]


class StoreError(Exception):
    """Base of every run store error: the store cannot do what was asked."""


class StoreNotFoundError(StoreError):
    """The store does not exist and was opened with `create=False`."""


class StoreCorruptError(StoreError):
    """The file is not a database, is malformed or lacks the run store's tables."""


class StoreFormatError(StoreError):
    """The store was written in a newer format than this program reads."""

    def __init__(self, message: str, *, found: int | None = None, supported: int | None = None):
        super().__init__(message)
        self.found = found
        """The format version found in the store."""
        self.supported = supported
        """The newest format version this program reads."""


class StoreUnavailableError(StoreError):
    """The store could not do it now, but may later: the connection was lost, the server is
    restarting, the disk is full, or the database stayed busy. Retrying the same call later
    can succeed (a write that failed this way may or may not have been committed)."""


class StoreLockedError(StoreUnavailableError):
    """The database stayed locked or busy beyond the busy timeout."""


class RunNotFoundError(StoreError):
    """No run has the given id (the message lists up to 5 recent run ids)."""

    def __init__(self, message: str, *, run_id: str | None = None):
        super().__init__(message)
        self.run_id = run_id
        """The run id that was asked for."""


class RunExistsError(StoreError):
    """A run with the given id already exists."""

    def __init__(self, message: str, *, run_id: str | None = None):
        super().__init__(message)
        self.run_id = run_id
        """The run id that is taken."""


class CheckpointNotFoundError(StoreError, KeyError):
    """The run has no checkpoint with the given sequence number."""

    def __str__(self) -> str:
        """The message itself (KeyError would quote it)."""
        return str(self.args[0]) if self.args else ""


class _LeaseProblem(StoreError):
    """A lease error that names the lease's holder and its expiry."""

    def __init__(
        self, message: str, *, holder: str | None = None, expires: float | None = None
    ) -> None:
        super().__init__(message)
        self.holder = holder
        """The owner holding the lease now, if any."""
        self.expires = expires
        """When that lease (or the lost one) expires (epoch seconds)."""


class LeaseError(_LeaseProblem):
    """Another owner holds an unexpired lease on the run."""


class LeaseLostError(_LeaseProblem):
    """A write by an owner that no longer holds the run's lease (fencing)."""

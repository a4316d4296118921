"""RunStopped: how work ends a whole run at once instead of failing its node."""

from __future__ import annotations

__all__ = ["RunStopped", "stop_of"]


class RunStopped(BaseException):
    """Raised by work that must end the whole run at once, never be a node's outcome: a durable
    run whose store failed. A BaseException so that no `except Exception` on the way (a node's,
    a tool wrapper's) takes it for a failure a Selector could fall back from. The runner halts
    every node and raises `error` from `run`/`arun`."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error
        """The exception `run`/`arun` raise for it."""


def stop_of(exc: BaseException) -> RunStopped | None:
    """The RunStopped that `exc` is, or holds (a task group wraps what its tasks raised)."""
    if isinstance(exc, RunStopped):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = stop_of(inner)
            if found is not None:
                return found
    return None

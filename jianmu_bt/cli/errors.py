"""The one exception a command raises for a user mistake: printed as a message, exit code 1."""

from __future__ import annotations


class CLIError(Exception):
    """A mistake in what the user asked (missing file, bad `--set`, ...); no traceback is shown."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code

    def __str__(self) -> str:
        return self.message

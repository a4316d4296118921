"""Diagnostics: located messages about a tree file, and the error that carries them.

Every problem the loader finds — a YAML syntax error, a key pydantic refuses, an unknown tool, a
static-check finding — becomes one `Diagnostic` with the file, a 1-based line and column, a
severity and a short code. They print the way compilers print, so editors and CI logs can jump
to them:

```
trees/audit.yaml:12:9: error: unknown key 'nmae' in 'tool' (did you mean 'name'?)
```
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding: where (file, 1-based line and column), how bad, what, and a stable code."""

    file: str
    line: int
    col: int
    severity: Severity
    message: str
    code: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: {self.severity}: {self.message}"

    @property
    def is_error(self) -> bool:
        """True for an error (the tree cannot be built), False for a warning."""
        return self.severity == "error"

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready dict (for `jianmu validate --json` and editors)."""
        return {
            "file": self.file,
            "line": self.line,
            "col": self.col,
            "severity": self.severity,
            "message": self.message,
            "code": self.code,
        }


def sort_diagnostics(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Diagnostics without duplicates, ordered by file then position (errors first on a tie)."""
    unique = dict.fromkeys(diagnostics)
    return sorted(unique, key=lambda d: (d.file, d.line, d.col, d.severity != "error", d.message))


class TreeLoadError(Exception):
    """A tree file could not be loaded; `diagnostics` lists every problem found (all at once).

    `str()` is one `file:line:col: severity: message` line per diagnostic.
    """

    def __init__(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics: list[Diagnostic] = sort_diagnostics(diagnostics)
        super().__init__("\n".join(str(d) for d in self.diagnostics))

    @property
    def errors(self) -> list[Diagnostic]:
        """Only the diagnostics of severity "error"."""
        return [d for d in self.diagnostics if d.is_error]

    def __str__(self) -> str:
        return "\n".join(str(d) for d in self.diagnostics)


def quote_list(names: Iterable[str], limit: int = 30) -> str:
    """`a, b, c` (cut with `...` after `limit` names), or `(none)`."""
    items = list(names)
    if not items:
        return "(none)"
    shown = ", ".join(items[:limit])
    return shown + (", ..." if len(items) > limit else "")

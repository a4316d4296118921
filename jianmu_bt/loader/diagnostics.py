"""Diagnostics: located messages about a tree file, and the error that carries them.

Every problem the loader finds — a YAML syntax error, a key pydantic refuses, an unknown tool, a
static-check finding — becomes one `Diagnostic` with the file, a 1-based line and column, a
severity, a short code and, where there is one, a hint saying how to fix it. They print the way
compilers print, so editors and CI logs can jump to them (`str()` is the first line alone;
`describe()` adds the hint):

```
trees/audit.yaml:12:9: error: unknown key 'nmae' in 'tool' (did you mean 'name'?)
trees/audit.yaml:14:22: error: tool 'write_file': argument 'content' is a string, got 5
    hint: quote it: content: "5"
```
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]

DEFAULT_HINTS: dict[str, str] = {
    "yaml-syntax": "check the indentation (spaces, not tabs) and the quoting around this place",
    "duplicate-key": "keep one of the two keys",
    "unknown-key": "fix the spelling; `jianmu schema` lists the keys of every node kind",
    "missing-key": "add the key; `jianmu schema` shows what each node kind needs",
    "unknown-kind": "a node is `kind: {...}` with one of the known kinds",
    "node-shape": "write each node as a one-key mapping: `kind: {key: value, ...}`",
    "invalid-value": "`jianmu schema` shows the values each key takes",
    "tool-entry": "see docs/yaml.md, section `tools`",
    "unknown-tool": "`jianmu tools` lists the tools available here",
    "tool-unavailable": "`jianmu tools` shows what each unavailable tool needs",
    "tool-options": "see the tool's options in docs/builtin-tools.md",
    "import-error": "the module is searched next to the tree file and on sys.path",
    "unknown-state-key": "declare it under `state:`, or fix the spelling",
    "unknown-tree": "name one of the file's `trees:`",
    "include-missing": "a subtree's `file` is relative to the file that includes it",
    "include-cycle": "a subtree must not include itself, directly or through others",
    "bad-expression": "a condition compares state fields: `total > 10 and name == 'x'`",
    "type-mismatch": "make the value fit the field's declared type, or change the type",
    "type-maybe": "declare the field as `string`, or make sure the text is a number",
    "duplicate-id": "give each node its own `id`",
    "duplicate-name": "give each node its own `name`",
    "unreachable": "reorder the children, or drop the ones that can never run",
    "no-llm": "`llm: {provider: scripted, replies: [...]}` runs the tree offline",
    "provider-tool": "run the tree (or `jianmu tools`) to see the server's tools",
}
"""A hint for each kind of finding whose message does not carry its own (`Diagnostic.hint`)."""


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding: where (file, 1-based line and column), how bad, what, a stable code, and
    how to fix it (`hint`: given, else the code's `DEFAULT_HINTS` entry, else "")."""

    file: str
    line: int
    col: int
    severity: Severity
    message: str
    code: str
    hint: str = ""

    def __post_init__(self) -> None:
        if not self.hint and self.code in DEFAULT_HINTS:
            object.__setattr__(self, "hint", DEFAULT_HINTS[self.code])

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: {self.severity}: {self.message}"

    def describe(self) -> str:
        """`str(self)`, and the hint on an indented second line when there is one."""
        return f"{self}\n    hint: {self.hint}" if self.hint else str(self)

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
            "hint": self.hint,
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

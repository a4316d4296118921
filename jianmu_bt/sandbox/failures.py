"""The raw results of sandboxed calls that failed: a limit hit, or the sandbox unable to run them.

Plain functions with no dependencies beyond the standard library: the sandbox worker and its call
processes report these, and must not load pydantic (which `SandboxLimits` in `limits` needs) just
to word an error.
"""

from __future__ import annotations

from typing import Any, Literal

#: The limits a call can hit; every limit error names one of these.
LimitName = Literal["timeout", "memory", "cpu", "processes", "output", "files"]


def format_size(n: int) -> str:
    """A short human form of a byte count ("512 MiB")."""
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:.4g} {unit}"
    return f"{n} bytes"


def limit_error(limit: LimitName, detail: str) -> dict[str, Any]:
    """The raw result of a call that hit `limit`: a failure whose error names the limit.

    `ToolResult.from_raw` reads it as `ok=False` with the error text; the extra `limit` key lets
    callers branch on the limit without parsing text.
    """
    return {"ok": False, "error": f"Error: {limit} limit exceeded: {detail}", "limit": limit}


def sandbox_error(detail: str) -> dict[str, Any]:
    """The raw result of a call the sandbox could not run (not a limit): a failure saying why."""
    return {"ok": False, "error": f"Error: sandbox: {detail}"}

"""Render DOT text to SVG, PNG or PDF with Graphviz's `dot` program.

Graphviz is a system program, not a Python package (Debian: `apt-get install graphviz`). When
`dot` is missing, rendering raises `GraphvizNotFoundError` with that advice; writing `.dot` text
never needs it. `dot` runs as a subprocess with a timeout, so a pathological graph cannot hang
the caller.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

#: Formats `render_dot` produces, by file suffix.
RENDER_FORMATS = ("svg", "png", "pdf")
#: Suffixes written as DOT text.
TEXT_SUFFIXES = (".dot", ".gv")
#: Seconds `dot` may take before it is killed.
DEFAULT_TIMEOUT = 30.0


class RenderError(RuntimeError):
    """Graphviz could not render the graph (it failed, timed out, or the format is unknown)."""


class GraphvizNotFoundError(RenderError):
    """Graphviz's `dot` program is not installed (or not on PATH)."""


def find_dot(dot_binary: str | None = None) -> str | None:
    """The path of Graphviz's `dot` (`dot_binary`, else $GRAPHVIZ_DOT, else PATH), or None."""
    candidate = dot_binary or os.environ.get("GRAPHVIZ_DOT") or "dot"
    return shutil.which(candidate)


def render_dot(
    dot_text: str,
    fmt: str = "svg",
    *,
    timeout: float = DEFAULT_TIMEOUT,
    dot_binary: str | None = None,
) -> bytes:
    """DOT text rendered by Graphviz to `fmt` (svg, png or pdf); returns the bytes."""
    fmt = fmt.lower().lstrip(".")
    if fmt not in RENDER_FORMATS:
        raise RenderError(f"cannot render to '{fmt}': use one of {', '.join(RENDER_FORMATS)}")
    program = find_dot(dot_binary)
    if program is None:
        raise GraphvizNotFoundError(
            "Graphviz's `dot` program was not found, so the graph cannot be rendered to "
            f"{fmt.upper()}. Install Graphviz (Debian/Ubuntu: apt-get install graphviz; "
            "macOS: brew install graphviz), or write DOT text instead (-o graph.dot)."
        )
    try:
        completed = subprocess.run(
            [program, f"-T{fmt}"],
            input=dot_text.encode("utf-8"),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RenderError(f"Graphviz `dot` did not finish within {timeout:g}s") from None
    except OSError as exc:
        raise RenderError(f"could not start Graphviz `dot` ({program}): {exc}") from exc
    if completed.returncode != 0:
        message = completed.stderr.decode("utf-8", "replace").strip()
        raise RenderError(f"Graphviz `dot` failed (exit {completed.returncode}): {message}")
    return completed.stdout


def write_graph(
    dot_text: str,
    path: str | Path,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    dot_binary: str | None = None,
) -> Path:
    """Write the graph to `path`: DOT text for .dot/.gv, else rendered by its suffix.

    Nothing is written when rendering fails, so no half-written file is left behind.
    """
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        target.write_text(dot_text, encoding="utf-8")
        return target
    if suffix.lstrip(".") not in RENDER_FORMATS:
        known = ", ".join([*TEXT_SUFFIXES, *(f".{f}" for f in RENDER_FORMATS)])
        raise RenderError(f"'{target}': unknown output type '{suffix or '(none)'}'; use {known}")
    data = render_dot(dot_text, suffix, timeout=timeout, dot_binary=dot_binary)
    target.write_bytes(data)
    return target

"""Opening what a command names: tree files, `--set key=value` inputs, trace files.

Every mistake here is a `CLIError` naming the file or the option, never a traceback.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from jianmu_bt.cli.errors import CLIError


def existing_file(path: str | Path, what: str = "tree file") -> Path:
    """`path` as a Path when it is a readable file, else a CLIError saying what is wrong."""
    candidate = Path(path)
    if not candidate.exists():
        raise CLIError(f"{candidate}: no such {what}")
    if candidate.is_dir():
        raise CLIError(f"{candidate}: is a directory, not a {what}")
    if not candidate.is_file():  # a FIFO or a device: opening it could block or never end
        raise CLIError(f"{candidate}: not a regular file, so not a {what}")
    try:
        with candidate.open("rb"):
            pass
    except OSError as exc:
        raise CLIError(f"{candidate}: cannot read the {what} ({exc.strerror})") from None
    return candidate


def load_tree_file(path: str | Path, **options: Any) -> Any:
    """The loaded Tree of a YAML file (a TreeLoadError with diagnostics when it is broken)."""
    from jianmu_bt.loader import load_tree

    return load_tree(existing_file(path), **options)


def parse_assignment(text: str) -> tuple[str, Any]:
    """`key=value` as (key, value); the value is read as YAML ("3" -> 3, "true" -> True)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise CLIError(f"--set {text!r}: expected key=value (for example --set question='2+2?')")
    if not raw.strip():
        return key, ""
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise CLIError(f"--set {key}: the value {raw!r} is not valid YAML ({problem})") from None
    return key, value


def parse_assignments(items: Iterable[str] | None) -> dict[str, Any]:
    """Every `--set` as a dict (a later assignment of the same key wins)."""
    return dict(parse_assignment(item) for item in items or ())


def apply_inputs(state: Any, inputs: Mapping[str, Any]) -> None:
    """Write `inputs` to the tree's state, validated against its schema (all or nothing)."""
    from jianmu_bt.runtime import StateValidationError

    known = tuple(state.fields)
    for key in inputs:
        if key not in known:
            raise CLIError(
                f"--set {key}: the tree's state has no field '{key}'; "
                f"its fields are: {', '.join(known) or '(none)'}"
            )
    try:
        state.update(dict(inputs))
    except StateValidationError as exc:
        raise CLIError(f"--set {exc.field}: {exc}") from None

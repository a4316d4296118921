"""Units: one tree file (or YAML text) parsed, validated and kept with its positions.

`UnitLoader` loads the main source and every file a `subtree` includes, each once (by resolved
path), collecting every file's diagnostics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from jianmu_bt.loader.diagnostics import TEXT_SOURCE, Diagnostic
from jianmu_bt.loader.model import TreeFileBase
from jianmu_bt.loader.positions import SourceMap, parse_yaml
from jianmu_bt.loader.registry import models
from jianmu_bt.loader.schema_errors import validation_diagnostics

MAX_FILE_BYTES = 8 * 1024 * 1024
"""Largest tree file read (a bigger one is almost certainly not a tree file)."""


@dataclass
class Unit:
    """One validated tree file: where it is, its data, positions and model."""

    file: str
    path: Path | None
    base_dir: Path
    source: SourceMap
    data: Any
    model: TreeFileBase
    key: str = ""
    notes: list[Diagnostic] = field(default_factory=list)

    def at(self, path: tuple[str | int, ...], *, key: bool = False) -> tuple[int, int]:
        """Line and column of `path` in this file (of its key with `key=True`)."""
        return self.source.key(path) if key else self.source.value(path)


def display_name(path: Path) -> str:
    """A file's name in messages: relative to the working directory when it is below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def parse_unit(
    text: str, file: str, path: Path | None, base_dir: Path
) -> tuple[Unit | None, list[Diagnostic]]:
    """Parse and validate one source; a Unit when it is valid, and its diagnostics."""
    data, source, problems = parse_yaml(text, file)
    if data is None and not problems:
        problems = [Diagnostic(file, 1, 1, "error", "the file is empty", "empty-file")]
    if (data is None and problems) or any(p.code != "duplicate-key" for p in problems):
        return None, problems  # the data has holes: what follows would only be noise
    if not isinstance(data, dict):
        what = type(data).__name__ if data is not None else "nothing"
        message = f"a tree file is a mapping (version, name, state, tools, root, ...), got {what}"
        return None, [*problems, Diagnostic(file, 1, 1, "error", message, "not-a-tree")]
    file_model = models().file
    try:
        model = file_model.model_validate(data)
    except ValidationError as exc:
        return None, [*problems, *validation_diagnostics(exc, data, source, file_model)]
    key = str(path.resolve()) if path is not None else f"{TEXT_SOURCE}:{id(data)}"
    unit = Unit(file, path, base_dir, source, data, model, key)
    return unit, problems


class UnitLoader:
    """Loads files once each; remembers the ones that failed so their errors show once."""

    def __init__(self) -> None:
        self.units: dict[str, Unit | None] = {}
        self.diagnostics: list[Diagnostic] = []

    def load_file(self, path: Path) -> tuple[Unit | None, str | None]:
        """The unit of `path`, or None and why (a reason only for a file that cannot be read)."""
        key = str(path.resolve())
        if key in self.units:
            return self.units[key], None
        shown = display_name(path)
        try:
            size = path.stat().st_size
            if size > MAX_FILE_BYTES:
                return None, f"{shown} is larger than {MAX_FILE_BYTES} bytes"
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None, f"file not found: {shown}"
        except IsADirectoryError:
            return None, f"{shown} is a directory, not a tree file"
        except UnicodeDecodeError as exc:
            return None, f"{shown} is not UTF-8 text ({exc.reason} at byte {exc.start})"
        except OSError as exc:
            return None, f"cannot read {shown}: {exc.strerror or exc}"
        unit, problems = parse_unit(text, shown, path, path.resolve().parent)
        self.diagnostics.extend(problems)
        self.units[key] = unit
        return unit, None

    def load_text(self, text: str, file: str, base_dir: Path) -> Unit | None:
        """The unit of YAML text (its errors go to `diagnostics`)."""
        unit, problems = parse_unit(text, file, None, base_dir)
        self.diagnostics.extend(problems)
        if unit is not None:
            self.units[unit.key] = unit
        return unit

"""What the node panel shows of a loaded tree's node: its YAML source and the state it touches.

The loader keeps on a built behaviour only its NodeInfo (id, kind, file:line); the state keys a
node reads and writes are worked out by the loader's analysis of the file. This module runs the
loader's stages up to that analysis again on the tree's file (`loader.api.analyse_nodes`: no
build, no LLM provider or guard made) to get them, and reads each node's YAML
block from the file it was written in: only those files, never a path a browser asked for.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

#: Most lines of YAML shown for one node.
SOURCE_LINES = 40


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """A node's source file (a real path), its state reads and writes."""

    path: Path | None
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()


@dataclass
class SourceFiles:
    """Lines of the tree's files, read once each."""

    _lines: dict[Path, list[str]] = field(default_factory=dict)

    def block(self, path: Path | None, line: int) -> str:
        """The YAML block that starts at `line` (1-based) of `path`: that line and the lines
        indented deeper below it; "" when the file cannot be read."""
        if path is None or line < 1:
            return ""
        lines = self._read(path)
        if line > len(lines):
            return ""
        first = lines[line - 1]
        # The column of the node's key (after a list item's "- "): its block is what is deeper.
        key_column = len(first) - len(first.lstrip(" -"))
        block = [first]
        for text in lines[line:]:
            if text.strip() and len(text) - len(text.lstrip(" ")) <= key_column:
                break
            if len(block) >= SOURCE_LINES:
                block.append("...")
                break
            block.append(text)
        while block and not block[-1].strip():
            block.pop()
        return "\n".join(block)

    def _read(self, path: Path) -> list[str]:
        if path not in self._lines:
            try:
                self._lines[path] = path.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError):
                self._lines[path] = []
        return self._lines[path]


def analyse_file(path: Path | None) -> dict[str, NodeFacts]:
    """Record id -> NodeFacts for the tree file at `path` ({} when it cannot be analysed)."""
    if path is None:
        return {}
    try:
        # The loader's stages up to the analysis (nothing built, no provider made).
        from jianmu_bt.loader.api import analyse_nodes

        records = analyse_nodes(Path(path), check=False)
    except Exception:  # a file that changed since it was loaded: the panel shows less
        logger.debug("could not analyse %s for the viewer", path, exc_info=True)
        return {}
    facts: dict[str, NodeFacts] = {}
    for record_id, record in records.items():
        io: Any = record.io
        unit_path = getattr(record.unit, "path", None)
        facts[record_id] = NodeFacts(
            Path(unit_path) if unit_path is not None else None,
            tuple(sorted(io.reads)) if io is not None else (),
            tuple(sorted(io.writes)) if io is not None else (),
        )
    return facts

"""The package's import graph and its layer order, for the layer test and the architecture picture.

The layer order is written once, in docs/architecture.md (its first fenced block: one line per
layer, the highest first, `a | b` for layers side by side). This module reads it and builds the
real import graph of the package from the source: every `import` and `from ... import`, at module
level or inside a function (lazy) or under TYPE_CHECKING, and every string that names a package
module (`"jianmu_bt.x.y"` or `"jianmu_bt.x.y:attr"`, as lazy registries write them). Nothing is
imported. Not part of the public API.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "jianmu_bt"
ARCHITECTURE = REPO / "docs" / "architecture.md"
ROOT = "jianmu_bt"

_REFERENCE = re.compile(r"^(jianmu_bt(?:\.\w+)+)(?::[\w.]+)?$")


@dataclass(frozen=True)
class Arrow:
    """One import: `source` imports `target` at `line` of the source's file."""

    source: str
    target: str
    line: int


def layer_order(text: str | None = None) -> list[list[str]]:
    """The layers from lowest to highest; each entry lists the layers side by side at that level."""
    text = ARCHITECTURE.read_text() if text is None else text
    block = text.split("```", 2)[1]
    levels = []
    for line in block.splitlines()[1:]:
        head = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        if head:
            levels.append([name.strip().replace("/", ".") for name in head.split("|")])
    return levels[::-1]


def ranks(levels: list[list[str]] | None = None) -> dict[str, int]:
    """Layer name (`tools`, `tools.builtin`, ...) -> its level, 0 the lowest."""
    levels = layer_order() if levels is None else levels
    return {name: index for index, names in enumerate(levels) for name in names}


def layer_of(module: str, known: dict[str, int]) -> str | None:
    """The most specific layer of `jianmu_bt.a.b...`; None for the package root's own modules."""
    parts = module.split(".")[1:]
    for size in (2, 1):
        key = ".".join(parts[:size])
        if len(parts) >= size and key in known:
            return key
    return None


def modules() -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def arrows() -> list[Arrow]:
    """Every import between the package's modules (see the module doc for what counts)."""
    known = modules()
    found: list[Arrow] = []
    for source, path in known.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in targets(node, known):
                if target != source:
                    found.append(Arrow(source, target, getattr(node, "lineno", 0)))
    return found


def targets(node: ast.AST, known: dict[str, Path]) -> set[str]:
    """The package modules one AST node imports (an import statement or a module string)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in known}
    if isinstance(node, ast.ImportFrom):
        base = node.module if node.level == 0 else None
        if base is None or base not in known:
            return set()
        submodules = {f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known}
        # `from pkg import sub` imports the package too, but names only the submodule.
        return submodules if len(submodules) == len(node.names) else {base, *submodules}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        match = _REFERENCE.match(node.value)
        if match and match.group(1) in known:
            return {match.group(1)}
    return set()


def relative_imports() -> list[str]:
    """`file:line` of every relative import in the package (there should be none)."""
    return [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for path in modules().values()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.level
    ]


def layer_arrows(known: dict[str, int] | None = None) -> set[tuple[str, str]]:
    """(from layer, to layer) for every import that crosses layers."""
    known = ranks() if known is None else known
    found = set()
    for arrow in arrows():
        source, target = layer_of(arrow.source, known), layer_of(arrow.target, known)
        if source and target and source != target:
            found.add((source, target))
    return found


def layers_dot() -> str:
    """DOT of the layer order (one row per level, lowest at the bottom) and the real arrows."""
    levels = layer_order()
    lines = [
        "// Made by `python tests/import_graph.py` from docs/architecture.md and the real imports.",
        "digraph layers {",
        '  rankdir=TB; node [shape=box, style="rounded,filled", fillcolor="#eef3fb",'
        ' fontname="Helvetica"]; edge [color="#8899aa", arrowsize=0.6];',
    ]
    for names in levels[::-1]:
        row = " ".join(f'"{name}";' for name in names)
        lines.append(f"  {{ rank=same; {row} }}")
    for upper, lower in zip(levels[::-1], levels[::-1][1:], strict=False):
        # Invisible arrows keep the levels in order where no real import links them.
        lines.append(f'  "{upper[0]}" -> "{lower[0]}" [style=invis];')
    for source, target in sorted(layer_arrows()):
        lines.append(f'  "{source}" -> "{target}";')
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import shutil
    import subprocess

    dot_file = REPO / "docs" / "layers.dot"
    dot_file.write_text(layers_dot())
    if shutil.which("dot"):
        subprocess.run(
            ["dot", "-Tsvg", str(dot_file), "-o", str(dot_file.with_suffix(".svg"))], check=True
        )

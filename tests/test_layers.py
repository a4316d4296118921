"""Layers are folders and imports point down only (docs/architecture.md)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "jianmu_bt"

# Lower rank = lower layer. A module may import its own package and anything of lower rank.
RANKS = {
    "sandbox.runner": 0,
    "tools": 1,
    "sandbox": 2,
    "tools.builtin": 3,
    "guard": 4,
    "llm": 4,
    "mcp": 5,
    "store": 5,
    "runtime": 6,
    "nodes": 7,
    "viz": 8,
    "loader": 9,
    "cli": 10,
}


def layer_of(dotted: str) -> str | None:
    """The most specific layer a `jianmu_bt.x.y` module name belongs to."""
    parts = dotted.split(".")[1:]
    for size in (2, 1):
        key = ".".join(parts[:size])
        if key in RANKS:
            return key
    return None


def imports_of(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("jianmu_bt.")}
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("jianmu_bt.")
        ):
            found.add(node.module)
    return found


def test_imports_point_down_only():
    violations = []
    for path in PACKAGE.rglob("*.py"):
        module = "jianmu_bt." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        own = layer_of(module)
        if own is None:
            continue  # the top-level package re-exports every layer
        for imported in imports_of(path):
            other = layer_of(imported)
            if other is None or other == own:
                continue
            if RANKS[other] >= RANKS[own]:
                violations.append(f"{module} imports {imported} ({own} -> {other})")
    assert violations == []


def test_every_layer_folder_is_ranked():
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders <= {key.split(".")[0] for key in RANKS}

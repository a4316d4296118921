"""Broken trees of every shape: validation lists located problems and never raises.

The trees are the broken corpus and the shipped trees, each mutated the way hands break YAML
(a word swapped for a key or a value, a line dropped or repeated, a stray key added), with a
fixed seed so a failure is reproducible. Every mutant must give diagnostics (or none) without an
exception, each located inside the text, and `load_tree` must refuse a mutant with errors with a
TreeLoadError carrying the same diagnostics.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from jianmu_bt.loader import TreeLoadError, load_tree, validate_source

REPO = Path(__file__).resolve().parents[2]
BROKEN = REPO / "tests" / "loader" / "broken"
SOURCES = sorted([*BROKEN.glob("*.yaml"), *(REPO / "trees").glob("*.yaml")])
WORDS = ["sequence", "tool", "child", "children", "arguments", "5", "null", "[]", "{}", "x"]
WORDS += ["{count}", "retry", "state", "type", "integer", "tools", "root", "check", "values"]
WORDS += ["subtree", "trees", "llm", "guard", "input_key", "output", "-", '"{a}"']


def mutants(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    texts = [path.read_text(encoding="utf-8") for path in SOURCES]
    found = []
    for _ in range(count):
        lines = rng.choice(texts).splitlines()
        for _ in range(rng.randint(1, 3)):
            if not lines:
                break
            at = rng.randrange(len(lines))
            words = lines[at].split(" ")
            roll = rng.random()
            if roll < 0.3:
                words[rng.randrange(len(words))] = rng.choice(WORDS)
                lines[at] = " ".join(words)
            elif roll < 0.5:
                del lines[at]
            elif roll < 0.7:
                lines.insert(at, lines[rng.randrange(len(lines))])
            else:
                words.insert(rng.randrange(len(words)), rng.choice(WORDS) + ":")
                lines[at] = " ".join(words)
        found.append("\n".join(lines) + "\n")
    return found


@pytest.mark.parametrize("seed", range(4))
def test_mutated_trees_give_located_diagnostics_and_never_raise(seed):
    for text in mutants(seed, 60):
        diagnostics = validate_source(text, base_dir=BROKEN)
        last_line = len(text.splitlines()) + 1
        for d in diagnostics:
            if d.file == "<string>":
                assert 1 <= d.line <= last_line and d.col >= 1, (str(d), text)
        if any(d.is_error for d in diagnostics):
            with pytest.raises(TreeLoadError) as caught:
                load_tree(text, base_dir=BROKEN)
            assert caught.value.diagnostics == diagnostics

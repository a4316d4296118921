"""docs/testing-trees.md: its excerpts are the example files' text, and its Python runs."""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from overlay_helpers import REPO

DOC = REPO / "docs" / "testing-trees.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def blocks(language: str) -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    return [body for lang, body in BLOCK.findall(text) if lang == language]


def test_the_excerpts_are_the_example_files_text():
    excerpts = [b for lang in ("yaml", "python") for b in blocks(lang) if b.startswith("# file: ")]
    assert len(excerpts) == 5
    for block in excerpts:
        first, _, body = block.partition("\n")
        source = (REPO / first.removeprefix("# file: ").strip()).read_text(encoding="utf-8")
        assert body in source, first


def test_the_python_example_runs_and_prints_what_it_says(monkeypatch: pytest.MonkeyPatch):
    (code,) = [b for b in blocks("python") if not b.startswith("# file: ")]
    # The doc says what it prints in the sentence after it (formatters keep prose as it is).
    (printed,) = re.findall(r"```\n\nIt prints `([^`]+)`", DOC.read_text(encoding="utf-8"))
    monkeypatch.chdir(REPO)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOC), "exec"), {})
    assert out.getvalue().splitlines() == [printed]

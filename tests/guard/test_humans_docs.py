"""docs/humans.md runs as written: each ```python block marked `<!-- runnable -->` runs, in order
and in one namespace, and prints exactly its `#> ` comments."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "humans.md"
RUNNABLE = re.compile(r"<!-- runnable -->\n```python\n(.*?)```", re.S)


def test_every_python_block_is_runnable_and_prints_what_the_page_says(
    capsys, tmp_path, monkeypatch
):
    text = DOC.read_text(encoding="utf-8")
    blocks = RUNNABLE.findall(text)
    assert len(blocks) == len(re.findall(r"```python\n", text)) >= 2
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "docs_humans_example"}
    for number, block in enumerate(blocks, 1):
        exec(compile(block, f"{DOC} (runnable block {number})", "exec"), namespace)
        promised = re.findall(r"^#> (.*)$", block, re.M)
        assert promised, f"runnable block {number} promises no output"
        assert capsys.readouterr().out.splitlines() == promised, f"runnable block {number}"

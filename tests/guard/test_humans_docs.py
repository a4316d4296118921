"""docs/humans.md runs as written: each ```python block marked `<!-- runnable -->` runs, in order
and in one namespace, and prints exactly its `#> ` comments."""

from __future__ import annotations

import re

from runnable_docs import DOCS, run_blocks


def test_every_python_block_is_runnable_and_prints_what_the_page_says(
    capsys, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    blocks = run_blocks("humans.md", capsys)
    text = (DOCS / "humans.md").read_text(encoding="utf-8")
    assert len(blocks) == len(re.findall(r"```python\n", text)) >= 4

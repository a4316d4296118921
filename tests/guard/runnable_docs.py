"""Running a docs page's ```python blocks marked `<!-- runnable -->` as its examples promise."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
RUNNABLE = re.compile(r"<!-- runnable -->\n```python\n(.*?)```", re.S)


def run_blocks(page: str, capsys) -> list[str]:
    """Run each runnable block of `docs/<page>`, in order and in one namespace; each must print
    exactly its `#> ` comments. Returns the blocks."""
    doc = DOCS / page
    blocks = RUNNABLE.findall(doc.read_text(encoding="utf-8"))
    namespace: dict[str, object] = {"__name__": f"docs_{doc.stem}_example"}
    for number, block in enumerate(blocks, 1):
        exec(compile(block, f"{doc} (runnable block {number})", "exec"), namespace)
        promised = re.findall(r"^#> (.*)$", block, re.M)
        assert promised, f"runnable block {number} promises no output"
        assert capsys.readouterr().out.splitlines() == promised, f"runnable block {number}"
    return blocks

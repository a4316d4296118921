"""The example in docs/state.md runs as written."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "state.md"


def test_the_state_doc_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert blocks, "docs/state.md has no python example"
    namespace: dict[str, object] = {}
    exec(compile(blocks[0], str(DOC), "exec", dont_inherit=True), namespace)
    assert namespace["changes"], "the example's subscriber heard no change"

"""The runnable example in docs/llm.md runs and prints what the page says it prints."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "llm.md"


def test_offline_example_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    example = next(block for block in blocks if "anyio.run(main)" in block)
    exec(compile(example, str(DOC), "exec"), {"__name__": "docs_llm_example"})
    assert capsys.readouterr().out == "17 * 23 = 391 and 2 * 21 = 42.\n"


def test_the_round_trip_example_shows_what_goes_back(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    example = next(block for block in blocks if "anthropic_messages(conversation" in block)
    exec(compile(example, str(DOC), "exec"), {"__name__": "docs_llm_round_trip"})
    assert capsys.readouterr().out == "['thinking', 'tool_use']\n['tool_use']\n"

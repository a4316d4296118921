"""The first example of docs/runtime.md runs as written."""

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "runtime.md"


def test_runtime_doc_example_runs(capsys):
    code = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)[0]
    exec(compile(code, str(DOC), "exec"), {"__name__": "doc_example"})
    out = capsys.readouterr().out
    assert "tool.call.completed Batch fetch" in out
    assert out.strip().splitlines()[-1] == "Status.SUCCESS 32 3"

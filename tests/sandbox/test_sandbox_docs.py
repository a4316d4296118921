"""The example in docs/sandboxes.md runs as written and shows what the text says."""

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "sandboxes.md"


def test_the_documented_example_runs(tmp_path):
    code = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    script = tmp_path / "example.py"
    script.write_text(code)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    assert "network: none" in done.stdout
    assert "ToolResult(tool='word_count', ok=True, output=3" in done.stdout
    assert "timeout limit exceeded: the call ran longer than 2 s" in done.stdout
    assert "'exit_code': 3" in done.stdout

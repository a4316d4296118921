"""A batch of more runs than a pipe's buffer holds notes of: every run finishes.

Each pool job tells the driver which process runs it, through a pipe. Unread, that pipe filled
after about 2,300 runs and every worker blocked on it: a batch of 4,000 quick runs never ended.
The batch runs in a process of its own, bounded by a timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

TOOLS = '''
from jianmu_bt.tools import tool


@tool
def quick(x: int) -> int:
    """Give x + 1."""
    return x + 1
'''

TREE = """
version: 1
name: many
state:
  x: {type: integer, input: true}
  y: {type: integer}
tools: ["manytools:quick"]
root:
  sequence:
    name: Main
    children:
      - tool: {name: Quick, tool: quick, arguments: {x: "{x}"}, output: y}
"""

RUNS = 4000


def test_a_pool_batch_of_4000_quick_runs_finishes(tmp_path):
    (tmp_path / "manytools.py").write_text(TOOLS)
    (tmp_path / "tree.yaml").write_text(TREE)
    (tmp_path / "inputs.jsonl").write_text("".join(f'{{"x": {i}}}\n' for i in range(RUNS)))
    command = [sys.executable, "-m", "jianmu_bt.cli", "batch", "tree.yaml", "inputs.jsonl"]
    command += ["--workers", "2", "--store", str(tmp_path / "runs.db"), "--out", "out.jsonl"]
    done = subprocess.run(
        command,
        cwd=tmp_path,
        env={**os.environ},
        capture_output=True,
        text=True,
        timeout=600,  # a hang (the workers blocked on the full pipe) ends here, failing
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert len(lines) == RUNS
    assert {json.loads(line)["status"] for line in lines} == {"succeeded"}

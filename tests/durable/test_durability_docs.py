"""docs/durability.md and examples/durable_run.py run as written and print what they say.

Each ```python block of the page marked `<!-- runnable -->` runs, in order and in one namespace
(later blocks use the store and tree of earlier ones); the lines a block prints are exactly its
`#> ` comments. The command-line transcript runs too, and prints the lines it shows.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "durability.md"
EXAMPLE = REPO / "examples" / "durable_run.py"
RUNNABLE = re.compile(r"<!-- runnable -->\n```python\n(.*?)```", re.S)
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")


def _text() -> str:
    return DOC.read_text(encoding="utf-8")


def test_every_python_block_of_the_page_is_marked_runnable():
    blocks = re.findall(r"```python\n", _text())
    assert len(RUNNABLE.findall(_text())) == len(blocks) >= 4


def test_the_runnable_blocks_print_what_the_page_says(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "docs_durability_example"}
    for number, block in enumerate(RUNNABLE.findall(_text()), 1):
        exec(compile(block, f"{DOC} (runnable block {number})", "exec"), namespace)
        promised = re.findall(r"^#> (.*)$", block, re.M)
        assert promised, f"runnable block {number} promises no output"
        assert capsys.readouterr().out.splitlines() == promised, f"runnable block {number}"


def _in_order(expected: list[str], printed: list[str]) -> bool:
    """True when every expected line appears in `printed`, in this order."""
    lines = iter(printed)
    return all(any(line == wanted for line in lines) for wanted in expected)


def test_the_command_line_transcript_runs_as_shown(tmp_path):
    text = _text()
    (tree,) = re.findall(r"```yaml\n(.*?)```", text, re.S)
    (transcript,) = re.findall(r"^```\n(\$ .*?)^```", text, re.S | re.M)
    (tmp_path / "release.yaml").write_text(tree)
    env = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "dumb"}
    steps = re.split(r"^\$ ", transcript, flags=re.M)[1:]
    assert len(steps) == 4
    for step in steps:
        command, *shown = step.rstrip("\n").split("\n")
        words = shlex.split(command)
        assert words[0] == "jianmu"
        done = subprocess.run(
            [sys.executable, "-m", "jianmu_bt.cli", *words[1:]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode in (0, 3), done.stderr
        expected = [TIMESTAMP.sub("T", line) for line in shown if line.strip() != "..."]
        printed = [TIMESTAMP.sub("T", line) for line in done.stdout.splitlines()]
        assert _in_order(expected, printed), (command, expected, printed)
    assert (tmp_path / "notes.txt").read_text() == "total 42"


def test_the_example_pauses_then_resumes_without_running_a_step_twice():
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        "run release-1: paused",
        "held: call_5edfb0d044 deploy({'artifact': 'built 1.4'})",
        "effects so far: ['build 1.4']",
    ]
    assert lines[3:6] == [
        "run release-1: succeeded, outcome: deployed built 1.4",
        "effects: ['build 1.4', 'deploy built 1.4']",
        "build ran 1 time(s)",
    ]
    assert [line.split() for line in lines[6:]] == [
        ["root/0#1", "build", "done"],
        ["root/1#1", "deploy", "done"],
    ]

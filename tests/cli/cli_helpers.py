"""Running the `jianmu` command as a real subprocess, the way a user or CI runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TREES = REPO / "trees"
EXAMPLES = REPO / "examples"


def jianmu(
    *args: str | Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """`python -m jianmu_bt.cli ARGS` in `cwd` (default: the repository), output captured."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "dumb", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "jianmu_bt.cli", *map(str, args)],
        cwd=cwd or REPO,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def assert_clean_failure(result: subprocess.CompletedProcess[str], *messages: str) -> None:
    """Exit status 1, every message on stderr, and no Python traceback anywhere."""
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    for message in messages:
        assert message in result.stderr, (message, result.stderr)


def answering(text: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`jianmu ARGS` with `text` as its standard input (not a terminal)."""
    return subprocess.run(
        [sys.executable, "-m", "jianmu_bt.cli", *args],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "TERM": "dumb", **env},
        check=False,
    )

"""Smoke test of the benchmark suite: a quick run of one area prints the table and writes JSON.

It checks that the suite runs end to end, never how fast anything is.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_quick_toolset_run_prints_the_table_and_writes_the_json(tmp_path: Path) -> None:
    if importlib.util.find_spec("langchain_core") is None:
        pytest.skip("langchain-core (the bench extra) is not installed: pip install -e '.[bench]'")
    command = [sys.executable, "-m", "benchmarks", "--quick", "--only", "toolset"]
    done = subprocess.run(
        [*command, "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr[-2000:]

    header = re.search(
        r"^measure\s+ours\s+anchor\s+ratio\s+target\s+met\s+anchor$", done.stdout, re.M
    )
    assert header, done.stdout
    row = re.search(
        r"^sync fn on the loop: execute vs LangChain invoke\s+[\d.]+ us\s+[\d.]+ (us|ms)"
        r"\s+[\d.]+x\s+>=10x\s+(yes|NO)\s+LangChain @tool invoke$",
        done.stdout,
        re.M,
    )
    assert row, done.stdout

    results = json.loads((tmp_path / "latest.json").read_text(encoding="utf-8"))
    assert results["quick"] is True
    assert results["areas"] == ["toolset"]
    assert results["machine"]["python"] == ".".join(map(str, sys.version_info[:3]))
    compared = [r for r in results["rows"] if r["target"] != "-"]
    assert len(compared) == 2, results["rows"]
    for r in compared:
        assert r["area"] == "toolset"
        assert r["ours"] > 0 and r["anchor"] > 0
        assert r["ratio"] == pytest.approx(r["anchor"] / r["ours"], rel=0.5)
        assert r["met"] is (r["ratio"] >= 10)

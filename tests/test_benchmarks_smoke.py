"""Smoke tests of the benchmark suite: a quick run of one area prints the table, writes the JSON
and the plot; the harness scores rows, keeps their spread and refuses a verdict under heavy load.

They check that the suite runs end to end and reports honestly, never how fast anything is.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import report, suite
from benchmarks.harness import Section, Settings, faster, info, limit, within
from benchmarks.table import format_rows

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
        r"^measure\s+ours\s+anchor\s+ratio\s+p25-p75\s+target\s+met\s+anchor$", done.stdout, re.M
    )
    assert header, done.stdout
    row = re.search(
        r"^plain sync fn, default @tool: execute vs LangChain invoke\s+[\d.]+ us\s+[\d.]+ (us|ms)"
        r"\s+[\d.]+x\s+[\d.]+-[\d.]+\s+>=10x\s+(yes|NO|load)\s+LangChain @tool invoke",
        done.stdout,
        re.M,
    )
    assert row, done.stdout

    results = json.loads((tmp_path / "latest.json").read_text(encoding="utf-8"))
    assert results["quick"] is True
    assert results["areas"] == ["toolset"]
    assert results["machine"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert set(results["data"]["toolset"]["load"]) == {"before", "after"}
    cpu = results["data"]["toolset"]["cpu_ms"]  # the CPU reading around the area
    assert set(cpu) == {"before", "after"} and all(ms > 0 for ms in cpu.values())
    assert re.search(r"^CPU reading, .*: toolset \d+/\d+$", done.stdout, re.M), done.stdout
    compared = [r for r in results["rows"] if r["target"] != "-"]
    assert len(compared) == 2, results["rows"]
    for r in compared:
        assert r["area"] == "toolset"
        assert r["ours"] > 0 and r["anchor"] > 0
        assert r["ratio"] == pytest.approx(r["anchor"] / r["ours"], rel=0.5)
        assert r["spread"][0] <= r["ratio"] <= r["spread"][1]
        assert r["met"] is (r["ratio"] >= 10)
        assert r["verdict"] in ("yes", "NO", "load")
    assert [r["headline"] for r in results["rows"] if r["headline"]] == ["toolset"]
    tuned = [r for r in results["rows"] if "(tuned:" in r["what"]]
    assert tuned and all(r["target"] == "-" for r in tuned)  # tuned rows are never the verdict
    if importlib.util.find_spec("matplotlib") is not None:
        assert (tmp_path / "report.png").stat().st_size > 0


def test_rows_carry_the_median_the_spread_and_a_score_against_the_target() -> None:
    ours, anchor = [1.0, 2.0, 1.0, 1.0], [20.0, 20.0, 8.0, 12.0]  # per-round ratios 20, 10, 8, 12
    row = faster("x", ours, anchor, "a", 10, headline="toolset")
    assert row.ratio == 11 and row.score == pytest.approx(1.1) and row.met is True
    assert row.spread is not None and row.spread[0] < 11 < row.spread[1]
    assert row.verdict() == "yes" and row.headline == "toolset"

    slow = within("y", [3.0, 3.0], [2.0, 2.0], "a", 1.25)
    assert slow.ratio == 1.5 and slow.met is False and slow.verdict() == "NO"
    assert slow.score == pytest.approx(1.25 / 1.5)

    under = limit("z", [0.1, 0.2, 0.3], 0.15)
    assert under.ours == 0.2 and under.met is False and under.target == "<=150 ms"
    assert limit("w", [1000.0], 1536, "bytes").target == "<=1.5 KiB"
    assert info("v", 1.0).verdict() == "-"
    assert faster("u", [1.0], None, "missing", 10).verdict() == "n/a"


def test_a_busy_machine_turns_verdicts_into_load_with_a_note(monkeypatch) -> None:
    monkeypatch.setattr(suite, "cpus", lambda: 2)
    rows = [within("t", [2.0], [1.0], "a", 1.25), info("i", 1.0)]
    loads = suite.mark_load(Section("s", rows), before=1.0, after=3.5)
    assert loads == {"before": 1.0, "after": 3.5}
    assert rows[0].met is False and rows[0].load == 3.5 and rows[0].verdict() == "load"
    assert rows[1].load is None  # no target, nothing to withhold
    notes: list[str] = []
    line = format_rows(rows[:1], notes)[0]
    assert " load " in line and "[1]" in line
    assert notes == ["measured under load 3.50: not a verdict (it read NO)"]

    quiet = [within("t", [2.0], [1.0], "a", 1.25)]
    suite.mark_load(Section("s", quiet), before=1.9, after=0.5)
    assert quiet[0].verdict() == "NO"


def test_the_report_lists_every_headline_and_plots_the_measured_ones(tmp_path: Path) -> None:
    rows = [
        faster("toolset row", [1.0, 1.0], [20.0, 30.0], "a", 10, headline="toolset"),
        limit("agent row", [0.2, 0.3], 0.15, headline="agent500"),
    ]
    results = {"created": "2026-01-01", "quick": True, "rows": [r.to_json() for r in rows]}
    table = report.markdown(results)
    assert table.count("\n") == len(report.HEADLINES) + 1
    assert "| 25.00x (22.50-27.50) | yes |" in table
    assert "| 250.00 ms | NO |" in table
    assert "not measured" in table
    assert "CPU reading" not in table  # results without readings say nothing of them
    results["data"] = {"toolset": {"cpu_ms": {"before": 31.0, "after": 48.6}}, "agent": {}}
    assert report.markdown(results).endswith("(lower: quicker): toolset 31/49.")
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("matplotlib (the bench extra) is not installed")
    path = report.plot(results, tmp_path / "report.png")
    assert path.read_bytes().startswith(b"\x89PNG")


def test_only_a_full_run_of_every_area_replaces_the_committed_plot(tmp_path: Path) -> None:
    areas = {"a": lambda settings: Section("a", []), "b": lambda settings: Section("b", [])}

    def where(*argv: str) -> Path:
        return suite.report_path(suite.parse(list(argv), areas, "bench"), areas)

    assert where() == report.REPORT
    assert where("--quick") == suite.RESULTS / "report.png"
    assert where("--only", "a") == suite.RESULTS / "report.png"
    assert where("--out", str(tmp_path)) == tmp_path / "report.png"


def pid_area(settings) -> Section:
    """An area that says which process measured it."""
    return Section("pid", [info("pid", float(os.getpid()))], data={"quick": settings.quick})


def failing_area(settings) -> Section:
    raise ValueError("no anchor for this")


def dying_area(settings) -> Section:
    os._exit(3)


def test_each_area_runs_in_a_fresh_process_unless_asked_otherwise(tmp_path: Path) -> None:
    settings = Settings(quick=True, out=tmp_path)
    apart = suite.run_area("pid", pid_area, settings)
    assert apart.title == "pid" and apart.data["quick"] is True
    assert apart.rows[0].ours != os.getpid() and apart.rows[0].area == "pid"
    assert set(apart.data["load"]) == {"before", "after"}
    here = suite.run_area("pid", pid_area, settings, apart=False)
    assert here.rows[0].ours == os.getpid()


def test_an_area_that_raises_or_dies_in_its_process_becomes_a_failed_row(tmp_path: Path) -> None:
    settings = Settings(quick=True, out=tmp_path)
    failed = suite.run_area("broken", failing_area, settings)
    assert failed.title == "broken (failed)"
    assert failed.rows[0].note == "ValueError: no anchor for this"
    died = suite.run_area("dead", dying_area, settings)
    assert died.title == "dead (failed)"
    assert died.rows[0].note == "the area's process ended with status 3"

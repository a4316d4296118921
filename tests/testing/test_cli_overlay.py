"""`jianmu run --overlay`, `jianmu overlay record` and `jianmu overlay check`: the happy paths and
every user mistake as a message with its place, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from overlay_helpers import EXAMPLES, REPO

from jianmu_bt.cli import main
from jianmu_bt.testing import load_overlay

TREE = EXAMPLES / "research.yaml"
OVERLAY = EXAMPLES / "research.overlay.yaml"


def jianmu(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_run_with_an_overlay_runs_offline(capsys: pytest.CaptureFixture[str]):
    code, out, err = jianmu(capsys, "run", TREE, "--overlay", OVERLAY, "--no-store")
    assert code == 0, err
    assert "Run of 'research' finished: succeeded" in out
    assert 'Summarise.tools: http_request -> {"status": 200' in out
    assert "summary = Example Domain is a page reserved for documentation examples" in out


def test_a_run_that_strays_from_its_recording_exits_1(capsys: pytest.CaptureFixture[str]):
    code, out, err = jianmu(
        capsys, "run", TREE, "--overlay", OVERLAY, "--no-store", "--set", "url=https://x.org/"
    )
    assert code == 1
    assert "finished: failed" in out
    assert err.startswith(
        "jianmu: overlay: replay diverged: call 1 of 'http_request' with arguments "
        '{"url": "https://x.org/"} is not in the recording'
    )


def test_record_then_replay_through_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    trace = tmp_path / "run.jsonl"
    code, _, err = jianmu(capsys, "run", TREE, "--overlay", OVERLAY, "--no-store", "--trace", trace)
    assert code == 0, err
    replay = tmp_path / "replay.yaml"
    code, _, err = jianmu(capsys, "overlay", "record", trace, "-o", replay)
    assert code == 0, err
    assert err == f"wrote {replay}: 2 LLM reply(ies), 2 tool call(s)\n"
    text = replay.read_text(encoding="utf-8")
    assert text.startswith("# An overlay recorded from a run's trace (run.jsonl)")
    recorded = load_overlay(replay)
    assert sorted(recorded.tools) == ["http_request"]
    code, out, err = jianmu(capsys, "run", TREE, "--overlay", replay, "--no-store")
    assert code == 0, err
    code, out, _ = jianmu(capsys, "overlay", "record", trace)
    assert code == 0 and out == text  # without -o: the same YAML on stdout
    code, out, _ = jianmu(capsys, "overlay", "check", TREE, replay)
    assert code == 0 and out.endswith("fits " + str(TREE) + "\n")


def test_overlay_mistakes_are_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        "tools:\n  http_reqest: {result: 1}\nnodes:\n  Fetch: {resutl: 2}\n", encoding="utf-8"
    )
    code, _, err = jianmu(capsys, "run", TREE, "--overlay", broken, "--no-store")
    assert code == 1
    assert f"{broken}:4:11: error: unknown key 'resutl' in 'nodes.Fetch'" in err
    assert f"jianmu: error: --overlay {broken}: 1 error(s); the tree was not run" in err
    broken.write_text("tools:\n  http_reqest: {result: 1}\n", encoding="utf-8")
    code, _, err = jianmu(capsys, "overlay", "check", TREE, broken)
    assert code == 1
    assert (
        f"{broken}:2:3: error: the tree has no tool 'http_reqest' (did you mean 'http_request'?)"
        in err
    )
    code, _, err = jianmu(capsys, "run", TREE, "--overlay", tmp_path / "none.yaml")
    assert code == 1 and "none.yaml: no such overlay file" in err


def test_bad_traces_are_named_with_their_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    trace = tmp_path / "bad.jsonl"
    trace.write_text('{"type": "tree.tick"}\n{oops\n', encoding="utf-8")
    code, _, err = jianmu(capsys, "overlay", "record", trace)
    assert code == 1 and f"{trace}:2: not a JSON line" in err  # the one trace reader's words
    trace.write_text('{"type": "tree.tick"}\n[1, 2]\n', encoding="utf-8")
    code, _, err = jianmu(capsys, "overlay", "record", trace)
    assert code == 1 and f"{trace}:2: " in err and "Traceback" not in err
    trace.write_text('{"type": "tree.tick"}\n', encoding="utf-8")
    code, _, err = jianmu(capsys, "overlay", "record", trace)
    assert code == 1 and "the trace has no LLM replies and no tool calls to record" in err


def test_the_real_command_never_shows_a_traceback(tmp_path: Path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("llm: {replies: [{contnet: hi}]}\ntools: [\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "jianmu_bt.cli", "run", str(TREE), "--overlay", str(broken)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr + done.stdout
    assert "broken.yaml:3:1: error:" in done.stderr, done.stderr


def test_an_overlay_run_is_never_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(tmp_path)
    code, out, err = jianmu(capsys, "run", TREE, "--overlay", OVERLAY)
    assert code == 0, err
    assert "finished: succeeded" in out
    assert not (tmp_path / ".jianmu").exists()  # no run for `jianmu resume` to call for real
    for extra in (["--store", "runs.db"], ["--run-id", "r1"], ["--approve", "later"]):
        code, _, err = jianmu(capsys, "run", TREE, "--overlay", OVERLAY, *extra)
        assert code == 1
        assert "--overlay runs are not recorded in a run store" in err, extra
    assert not (tmp_path / "runs.db").exists() and not (tmp_path / ".jianmu").exists()

"""`jianmu dot`: DOT text that Graphviz parses, rendered files, trace colours, missing Graphviz."""

import shutil
import subprocess
import sys

import pytest
from cli_helpers import TREES, assert_clean_failure, jianmu
from py_trees.common import Status

from jianmu_bt.cli import main
from jianmu_bt.viz import STATUS_COLOURS

QUICKSTART = TREES / "quickstart.yaml"
needs_graphviz = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")


def node_line(text: str, label_start: str) -> str:
    return next(line for line in text.splitlines() if f'[label="{label_start}' in line)


@needs_graphviz
@pytest.mark.parametrize("tree", sorted(TREES.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_tree_round_trips_through_graphviz(tree, capsys):
    assert main(["dot", str(tree)]) == 0
    text = capsys.readouterr().out
    parsed = subprocess.run(
        ["dot", "-Tsvg"], input=text, capture_output=True, text=True, timeout=30, check=False
    )
    assert parsed.returncode == 0, parsed.stderr
    assert parsed.stderr == ""  # not even a warning
    assert "<svg" in parsed.stdout and "cluster_agent0" in text


def test_quickstart_drawing_shows_kinds_tools_conditions_and_the_agent(capsys):
    assert main(["dot", str(QUICKSTART)]) == 0
    text = capsys.readouterr().out
    assert text.startswith('digraph "quickstart" {')
    assert "shape=component" in node_line(text, "Sum\\ntool: calculator")
    assert "shape=diamond" in node_line(text, "TotalIsPositive\\ncondition: float(total) > 0")
    assert "shape=note" in node_line(text, "NoteNotSaved\\nset: saved")
    assert "shape=invhouse" in node_line(text, "Solver.loop\\nagent loop: max 4 iterations")
    assert 'label="agent: Solver (max 4 iterations)"' in text
    assert 'fillcolor="#ffffff"' in text and STATUS_COLOURS[Status.SUCCESS] not in text


def test_a_traced_run_colours_a_fresh_load_of_the_tree(tmp_path):
    trace = tmp_path / "run.jsonl"
    assert jianmu("run", QUICKSTART, "--trace", trace).returncode == 0
    out = tmp_path / "coloured.dot"
    result = jianmu("dot", QUICKSTART, "--status-from", trace, "-o", out)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert STATUS_COLOURS[Status.SUCCESS] in node_line(text, "Sum\\n")
    assert STATUS_COLOURS[Status.FAILURE] in node_line(text, "SaveTotal\\n")
    assert STATUS_COLOURS[Status.SUCCESS] in node_line(text, "Answered\\n")


@needs_graphviz
def test_svg_and_png_outputs_are_rendered(tmp_path, capsys):
    assert main(["dot", str(QUICKSTART), "-o", str(tmp_path / "q.svg"), "--rankdir", "LR"]) == 0
    assert main(["dot", str(QUICKSTART), "-o", str(tmp_path / "q.png")]) == 0
    assert "<svg" in (tmp_path / "q.svg").read_text()
    assert (tmp_path / "q.png").read_bytes()[:4] == b"\x89PNG"
    assert f"wrote {tmp_path / 'q.png'}" in capsys.readouterr().err


def test_without_graphviz_rendering_is_refused_clearly_and_dot_text_still_works(tmp_path):
    # A PATH holding only the Python interpreter: `dot` cannot be found.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    env = {"PATH": str(bin_dir), "GRAPHVIZ_DOT": ""}
    result = jianmu("dot", QUICKSTART, "-o", tmp_path / "q.svg", env=env)
    assert_clean_failure(
        result, "Graphviz's `dot` program was not found", "apt-get install graphviz"
    )
    assert not (tmp_path / "q.svg").exists()
    result = jianmu("dot", QUICKSTART, "-o", tmp_path / "q.dot", env=env)
    assert result.returncode == 0 and (tmp_path / "q.dot").read_text().startswith("digraph")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["-o", "graph.jpeg"], "unknown output type '.jpeg'"),
        (["--status-from", "no-trace.jsonl"], "no-trace.jsonl: no such trace file"),
    ],
)
def test_dot_mistakes_exit_1(extra, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["dot", str(QUICKSTART), *extra]) == 1
    assert message in capsys.readouterr().err


def test_a_broken_trace_is_named_with_its_line(tmp_path, capsys):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"type": "tree.tick"}\nnot json\n')
    assert main(["dot", str(QUICKSTART), "--status-from", str(trace)]) == 1
    assert f"{trace}:2: not a JSON line" in capsys.readouterr().err


def test_a_trace_of_another_tree_warns(tmp_path, capsys):
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"type": "node.status", "node": "Elsewhere", "id": "x", "new": "SUCCESS"}\n')
    assert main(["dot", str(QUICKSTART), "--status-from", str(trace)]) == 0
    assert "no node of 'quickstart' matches the trace" in capsys.readouterr().err

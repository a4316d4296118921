"""Rendering through Graphviz's `dot`: real output, a missing `dot`, failures and timeouts."""

import os
import shutil
import stat

import py_trees
import pytest
from viz_trees import mixed_tree

from jianmu_bt.viz import (
    GraphvizNotFoundError,
    RenderError,
    find_dot,
    render_dot,
    tree_to_dot,
    write_graph,
)

needs_graphviz = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")


def fake_dot(tmp_path, body: str) -> str:
    script = tmp_path / "fake-dot"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


@needs_graphviz
def test_graphviz_parses_and_renders_awkward_trees_to_svg():
    names = ['a "quoted" name', "colon: port", "back\\slash", "<html>", "graph", "node", "-> edge"]
    root = py_trees.composites.Selector(
        names[0], memory=True, children=[py_trees.behaviours.Success(n) for n in names[1:]]
    )
    svg = render_dot(tree_to_dot(root)).decode()
    assert svg.lstrip().startswith("<?xml") and "</svg>" in svg
    for name in ("colon: port", "back\\slash", "&lt;html&gt;"):
        assert name in svg


@needs_graphviz
def test_write_graph_picks_the_format_from_the_suffix(tmp_path):
    text = tree_to_dot(mixed_tree())
    png = write_graph(text, tmp_path / "tree.png")
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    svg = write_graph(text, tmp_path / "tree.SVG")
    assert b"<svg" in svg.read_bytes()
    dot = write_graph(text, tmp_path / "tree.dot")
    assert dot.read_text() == text


def test_dot_text_is_written_without_graphviz(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("GRAPHVIZ_DOT", raising=False)
    target = write_graph("digraph g {}", tmp_path / "g.gv")
    assert target.read_text() == "digraph g {}"


def test_a_missing_dot_program_is_a_clear_error_not_a_crash(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("GRAPHVIZ_DOT", raising=False)
    assert find_dot() is None
    with pytest.raises(GraphvizNotFoundError, match=r"apt-get install graphviz.*-o graph\.dot"):
        write_graph("digraph g {}", tmp_path / "g.svg")
    assert not (tmp_path / "g.svg").exists()


def test_unknown_output_suffixes_are_refused(tmp_path):
    with pytest.raises(RenderError, match=r"unknown output type '\.jpeg'"):
        write_graph("digraph g {}", tmp_path / "g.jpeg")
    with pytest.raises(RenderError, match="cannot render to 'gif'"):
        render_dot("digraph g {}", "gif")


def test_a_failing_dot_reports_its_message_and_writes_nothing(tmp_path):
    broken = fake_dot(tmp_path, 'echo "syntax error in line 1" >&2; exit 1')
    with pytest.raises(RenderError, match=r"exit 1.*syntax error in line 1"):
        write_graph("digraph g {}", tmp_path / "g.svg", dot_binary=broken)
    assert not (tmp_path / "g.svg").exists()


def test_a_hanging_dot_is_killed_at_the_timeout(tmp_path):
    pid_file = tmp_path / "dot.pid"
    hanging = fake_dot(tmp_path, f"echo $$ > {pid_file}; exec sleep 300")
    with pytest.raises(RenderError, match=r"did not finish within 0\.5s"):
        render_dot("digraph g {}", "png", timeout=0.5, dot_binary=hanging)
    pid = pid_file.read_text().strip() if pid_file.exists() else ""
    if pid:  # (on a very busy machine it may be killed before it wrote its pid)
        with pytest.raises(ProcessLookupError):  # killed and reaped, not left sleeping
            os.kill(int(pid), 0)


@needs_graphviz
def test_graphviz_dot_env_variable_names_the_program(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHVIZ_DOT", shutil.which("dot"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_dot() == os.environ["GRAPHVIZ_DOT"]
    assert render_dot("digraph g { a -> b }", "svg").startswith(b"<?xml")

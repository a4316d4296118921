"""`jianmu validate` on a newcomer's tree: every mistake in one run, located, with hints; --json.

The CLI runs as a real subprocess; `jianmu run` refuses the same tree with the same findings.
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import jianmu

NEWCOMER = """\
version: 1
name: notes
state:
  count: {type: integer, default: 3}
  text: {type: string, default: ""}
tools: [read_file, write_file, calculator]
root:
  sequence:
    children:
      - tool: {name: Load, tool: read_file, arguments: {pth: notes.txt}, output: text}
      - tool: {name: Save, tool: write_file, arguments: {path: copy.txt, content: 5}}
      - tool: {name: Sum, tool: calculater, arguments: {expression: "{count} * 2"}}
"""


def newcomer(tmp_path: Path) -> Path:
    path = tmp_path / "notes.yaml"
    path.write_text(NEWCOMER, encoding="utf-8")
    return path


def column(line: int, needle: str) -> int:
    return NEWCOMER.splitlines()[line - 1].index(needle) + 1


def test_validate_lists_the_three_mistakes_in_order_with_hints(tmp_path):
    result = jianmu("validate", "notes.yaml", cwd=newcomer(tmp_path).parent)
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines == [
        f"notes.yaml:10:{column(10, 'pth')}: error: tool 'read_file' (step 'Load') has no "
        "argument 'pth' (did you mean 'path'?)",
        "    hint: its arguments: path, start_line, max_lines",
        f"notes.yaml:11:{column(11, '5}')}: error: tool 'write_file' (step 'Save'): argument "
        "'content' takes a string, got the integer 5",
        '    hint: quote it to pass text: "5"',
        f"notes.yaml:12:{column(12, 'calculater')}: error: unknown tool 'calculater' "
        "(did you mean 'calculator'?)",
        "    hint: `jianmu tools` lists the tools available here",
        "checked 1 file(s): 3 error(s), 0 warning(s)",
    ]


def test_validate_json_carries_every_field_of_every_diagnostic(tmp_path):
    result = jianmu("validate", "--json", "notes.yaml", cwd=newcomer(tmp_path).parent)
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False and (report["errors"], report["warnings"]) == (3, 0)
    found = report["files"]["notes.yaml"]
    assert [set(d) for d in found] == [
        {"file", "line", "col", "severity", "code", "message", "hint"}
    ] * 3
    assert [(d["line"], d["code"]) for d in found] == [
        (10, "unknown-argument"),
        (11, "argument-type"),
        (12, "unknown-tool"),
    ]
    assert all(d["file"] == "notes.yaml" and d["severity"] == "error" for d in found)
    assert found[1]["col"] == column(11, "5}") and found[1]["hint"]


def test_run_refuses_the_same_tree_before_anything_runs(tmp_path):
    folder = newcomer(tmp_path).parent
    result = jianmu("run", "notes.yaml", cwd=folder)
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr
    assert f"notes.yaml:10:{column(10, 'pth')}: error:" in result.stderr
    assert f"notes.yaml:11:{column(11, '5}')}: error:" in result.stderr
    assert f"notes.yaml:12:{column(12, 'calculater')}: error:" in result.stderr
    assert not (folder / "copy.txt").exists()  # nothing ran
    # The same hints as `jianmu validate`, each under its error.
    validated = jianmu("validate", "notes.yaml", cwd=folder).stdout.splitlines()[:-1]
    assert result.stderr.splitlines()[: len(validated)] == validated


def test_run_with_an_overlay_shows_its_hints_too(tmp_path):
    folder = newcomer(tmp_path).parent
    (folder / "good.yaml").write_text(
        "version: 1\nstate: {out: {type: string}}\ntools: [calculator]\n"
        "root:\n  tool: {name: Sum, tool: calculator, arguments: {expression: '1'}, output: out}\n",
        encoding="utf-8",
    )
    (folder / "bad.overlay.yaml").write_text("tools: {calculator: {reslt: 1}}\n", encoding="utf-8")
    result = jianmu("run", "good.yaml", "--overlay", "bad.overlay.yaml", cwd=folder)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    at = next(i for i, line in enumerate(lines) if "unknown key 'reslt'" in line)
    assert lines[at + 1].startswith("    hint: ")

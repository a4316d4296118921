"""docs/yaml.md's newcomer example: validating its tree prints what the page shows, JSON too."""

from __future__ import annotations

import json
import re
from pathlib import Path

from jianmu_bt.cli import main

DOC = Path(__file__).resolve().parents[2] / "docs" / "yaml.md"


def _blocks() -> tuple[str, str, str]:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("A newcomer's first tree") :]
    tree = re.search(r"```yaml\n(.*?)```", section, re.S)
    output = re.search(r"```text\n(.*?)```", section, re.S)
    report = re.search(r"```json\n(.*?)```", section, re.S)
    assert tree and output and report
    return tree.group(1), output.group(1), report.group(1)


def test_the_newcomer_example_prints_what_the_page_shows(tmp_path, monkeypatch, capsys):
    tree, output, _ = _blocks()
    (tmp_path / "notes.yaml").write_text(tree, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "notes.yaml"]) == 1
    assert capsys.readouterr().out == output


def test_the_json_example_is_the_first_diagnostic_of_the_real_report(tmp_path, monkeypatch, capsys):
    tree, _, shown = _blocks()
    (tmp_path / "notes.yaml").write_text(tree, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "--json", "notes.yaml"]) == 1
    report = json.loads(capsys.readouterr().out)
    page = json.loads(shown)
    assert report["files"]["notes.yaml"][0] == page["files"]["notes.yaml"][0]
    assert {k: report[k] for k in ("ok", "errors", "warnings")} == {
        k: page[k] for k in ("ok", "errors", "warnings")
    }

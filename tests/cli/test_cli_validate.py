"""`jianmu validate`: every problem located as file:line:col, exit 1 on errors, CI-friendly."""

import json
import re

from cli_helpers import TREES, jianmu

from jianmu_bt.cli import main

BROKEN = TREES.parent / "tests" / "cli" / "broken"

# file -> (line, col, words the message must contain)
EXPECTED = {
    "wrong_indentation.yaml": (7, 6, "YAML syntax"),
    "unknown_kind.yaml": (6, 9, "unknown node kind 'sequense' (did you mean 'sequence'?)"),
    "key_typo.yaml": (5, 34, "unknown key 'argumnets' in 'tool' (did you mean 'arguments'?)"),
    "wrong_type.yaml": (4, 19, "num_failures: input should be a valid integer"),
    "missing_child.yaml": (3, 3, "missing required key 'child'"),
    "cycle_a.yaml": (3, 19, "include cycle"),
    "cycle_b.yaml": (5, 25, "include cycle"),
    "unknown_tool.yaml": (2, 9, "unknown tool 'calculater' (did you mean 'calculator'?)"),
    "bad_expression.yaml": (5, 23, "attribute access ('.') is not allowed"),
}
LINE = re.compile(
    r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<sev>error|warning): (?P<msg>.*)$"
)


def test_every_broken_file_gets_a_located_message_and_exit_1():
    files = sorted(BROKEN.glob("*.yaml"))
    assert {f.name for f in files} == set(EXPECTED)
    result = jianmu("validate", *files)
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr
    found = {}
    for line in result.stdout.splitlines():
        match = LINE.match(line)
        if match:
            found.setdefault(match["file"].rsplit("/", 1)[-1], []).append(match)
    for name, (line, col, words) in EXPECTED.items():
        located = [(int(m["line"]), int(m["col"])) for m in found[name]]
        assert (line, col) in located, (name, located)
        assert any(words in m["msg"] for m in found[name]), (name, [m["msg"] for m in found[name]])
    assert result.stdout.rstrip().endswith(
        f"checked {len(files)} file(s): 9 error(s), 0 warning(s)"
    )


def test_the_shipped_trees_are_valid():
    result = jianmu("validate", *sorted(TREES.glob("*.yaml")))
    assert result.returncode == 0, result.stdout
    assert "0 error(s), 0 warning(s)" in result.stdout
    assert "quickstart.yaml: ok" in result.stdout


WARNING_ONLY = """\
version: 1
name: no_llm
state: {answer: string}
root:
  agent: {name: Helper, goal: "say hi", output: answer}
"""


def test_warnings_pass_unless_strict(tmp_path, capsys):
    tree = tmp_path / "warn.yaml"
    tree.write_text(WARNING_ONLY)
    assert main(["validate", str(tree)]) == 0
    out = capsys.readouterr().out
    assert f"{tree}:5:3: warning: 'Helper' needs an LLM" in out
    assert main(["validate", "--strict", str(tree)]) == 1
    assert "(warnings count as errors: --strict)" in capsys.readouterr().out


def test_json_output_and_missing_files(tmp_path, capsys):
    good = TREES / "quickstart.yaml"
    missing = tmp_path / "gone.yaml"
    assert main(["validate", "--json", str(good), str(missing)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False and report["errors"] == 1
    assert report["files"][str(good)] == []
    (problem,) = report["files"][str(missing)]
    assert problem["message"] == "no such file" and problem["line"] == 1

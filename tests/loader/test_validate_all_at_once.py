"""One validation reports every problem of a file: a refused part never hides the others.

Also: a read of a key only the reading node writes is flagged, and a built-in tool that cannot be
built makes only that tool unavailable (located where the tree uses it).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jianmu_bt.loader import TreeLoadError, load_tree, validate_source
from jianmu_bt.tools import BuiltinToolProvider, Tool


def codes(source: str | Path, **options: object) -> list[tuple[str, int]]:
    return [(d.code, d.line) for d in validate_source(source, **options)]


TEXT = """\
root:
  sequence:
    children:
      - sequense: {children: [{condition: {check: "True"}}]}
      - tool: {tool: read_file, arguments: {path: a.txt, max_lines: lots}}
"""


def test_an_unknown_kind_in_one_branch_does_not_hide_a_bad_argument_in_another_first_time():
    # In a fresh process the models are built for the file's own kinds: its refused node's
    # placeholder must still validate (it was taken for an unknown kind, hiding the rest).
    script = f"from jianmu_bt.loader import validate_source\nprint(validate_source({TEXT!r}))"
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert "argument-type" in shown.stdout, shown.stdout + shown.stderr


def test_an_unknown_kind_in_one_branch_does_not_hide_a_bad_argument_in_another():
    assert codes(TEXT) == [("unknown-kind", 4), ("argument-type", 5)]


def test_a_misspelt_key_is_taken_for_the_key_it_is_close_to_and_checked():
    text = """\
root:
  tool: {tool: read_file, argumnets: {pth: a.txt}}
"""
    diagnostics = validate_source(text)
    line = text.splitlines()[1]
    assert [(d.code, d.line, d.col) for d in diagnostics] == [
        ("unknown-key", 2, line.index("argumnets") + 1),
        ("unknown-argument", 2, line.index("pth") + 1),  # where the file wrote it
    ]


def test_a_refused_node_is_left_out_of_the_later_checks():
    # the placeholder for the refused node neither reads, writes nor blocks anything
    text = """\
state: {total: {type: integer}}
root:
  sequence:
    children:
      - inverter: {child: 5}
      - set: {values: {total: 1}}
      - condition: {check: "total > 0"}
"""
    assert codes(text) == [("node-shape", 5)]


def test_a_bad_state_type_does_not_make_every_reference_unknown():
    text = """\
state: {total: {type: strng, default: x}}
root:
  tool: {tool: write_file, arguments: {path: "{total}", content: "{totl}"}}
"""
    assert codes(text) == [("invalid-value", 1), ("unknown-state-key", 3)]


def test_a_refused_tools_entry_does_not_stop_the_other_checks():
    text = """\
tools: [{builtin: write_file, optoins: {}}, calculator]
root:
  sequence:
    children:
      - tool: {tool: calculator, arguments: {expression: 5}}
      - tool: {tool: write_file, arguments: {path: a.txt}}
"""
    assert codes(text) == [("unknown-key", 1), ("argument-type", 5), ("missing-argument", 6)]


def test_problems_of_an_included_file_and_of_the_main_file_come_together(tmp_path):
    (tmp_path / "sub.yaml").write_text(
        "root:\n  sequence:\n    children:\n"
        "      - tool: {tool: read_file, arguments: {path: 3}}\n"
        "      - sequense: {children: []}\n"
    )
    main = tmp_path / "main.yaml"
    main.write_text(
        "root:\n  sequence:\n    children:\n"
        "      - subtree: {file: sub.yaml}\n"
        "      - tool: {tool: calculator, arguments: {expresion: '1'}}\n"
    )
    found = [(Path(d.file).name, d.code, d.line) for d in validate_source(main)]
    assert found == [
        ("main.yaml", "unknown-argument", 5),
        ("sub.yaml", "argument-type", 4),
        ("sub.yaml", "unknown-kind", 5),
    ]


def test_a_root_that_is_not_a_node_is_one_error_and_nothing_else():
    assert codes("state: {n: integer}\nroot: [1, 2]\n") == [("node-shape", 2)]


def test_load_tree_lists_every_problem_too():
    text = "root:\n  sequence:\n    children:\n      - nope: {}\n      - tool: {tool: bash}\n"
    with pytest.raises(TreeLoadError) as caught:
        load_tree(text)
    assert [d.code for d in caught.value.diagnostics] == ["unknown-kind", "missing-argument"]


# -- read before write ---------------------------------------------------------------------


def test_a_node_reading_a_key_only_it_writes_is_flagged():
    text = """\
state:
  count: {type: integer}
  seen: {type: integer}
  seed: {type: integer, default: 0}
root:
  sequence:
    children:
      - set: {values: {count: "{count}"}}
      - set: {values: {seed: "{seed}"}}
      - set: {values: {seen: 1}}
      - condition: {check: "seen > 0"}
"""
    diagnostics = validate_source(text)
    assert [(d.code, d.line, d.col) for d in diagnostics] == [("read-before-write", 8, 32)]
    assert "only this node writes it" in diagnostics[0].message
    assert "count: {type: integer, default: ...}" in diagnostics[0].hint


def test_a_tool_step_reading_its_own_output_first_is_flagged():
    text = """\
state: {notes: {type: string}}
root:
  tool: {tool: write_file, arguments: {path: a.txt, content: "{notes}"}, output: notes}
"""
    assert codes(text) == [("read-before-write", 3)]


# -- one built-in that cannot be built -------------------------------------------------------


def test_a_built_in_refusing_its_options_is_unavailable_only_where_it_is_used(tmp_path):
    tree = tmp_path / "t.yaml"
    tree.write_text(
        "tools: [{builtin: read_file, options: {workspace: missing_folder}}, calculator]\n"
        "root:\n  sequence:\n    children:\n"
        "      - tool: {tool: read_file, arguments: {path: a.txt}}\n"
        "      - tool: {tool: calculator, arguments: {expression: 7}}\n"
    )
    diagnostics = validate_source(tree)
    assert [(d.code, d.line) for d in diagnostics] == [
        ("tool-options", 1),
        ("unknown-tool", 5),
        ("argument-type", 6),  # the other tools still resolve and are checked
    ]
    assert "does not exist" in diagnostics[0].message
    # said once, at the entry; the step points there
    assert diagnostics[1].message == "tool 'read_file' is unavailable (see line 1)"


def test_bad_tool_options_for_a_built_in_made_on_demand_are_a_located_error():
    text = "tool_options: {workspace: 5}\nroot:\n  tool: {tool: list_dir}\n"
    diagnostics = validate_source(text)
    assert [(d.code, d.line, d.col) for d in diagnostics] == [("unknown-tool", 3, 16)]
    assert "refused its options" in diagnostics[0].message


class NeedsAPackage(Tool):
    """A tool whose optional package is not installed."""

    name = "needs_a_package"

    @classmethod
    def missing_requirement(cls) -> str | None:
        return "it needs the 'no_such_package' package (pip install no_such_package)"

    def run(self, input: object) -> object:
        return input


@pytest.fixture
def tool_without_its_package(monkeypatch):
    BuiltinToolProvider.list_builtin_names()  # the registry is filled before it is patched
    monkeypatch.setitem(BuiltinToolProvider._builtins, "needs_a_package", NeedsAPackage)


def test_a_built_in_missing_its_package_is_unavailable_with_the_reason(tool_without_its_package):
    text = """\
tools: [needs_a_package, calculator]
root:
  sequence:
    children:
      - tool: {tool: needs_a_package}
      - tool: {tool: calculator, arguments: {expression: "1 + 1"}}
"""
    diagnostics = validate_source(text)
    assert [(d.code, d.severity, d.line) for d in diagnostics] == [
        ("tool-unavailable", "warning", 1),
        ("unknown-tool", "error", 5),
    ]
    assert "no_such_package" in diagnostics[0].message
    assert diagnostics[1].message == "tool 'needs_a_package' is unavailable (see line 1)"
    unused = text.replace("      - tool: {tool: needs_a_package}\n", "")
    assert codes(unused) == [("tool-unavailable", 1)]  # listed but unused: a warning only


def test_only_an_option_replacing_the_missing_package_makes_the_tool_available(monkeypatch):
    from jianmu_bt.tools.builtin.web_search import DuckDuckGoSearchTool
    from jianmu_bt.tools.registry import ToolUnavailableError

    monkeypatch.setattr(  # as on a machine without ddgs
        DuckDuckGoSearchTool, "missing_requirement", classmethod(lambda cls: "needs 'ddgs'")
    )
    step = "root:\n  tool: {tool: duckduckgo_search, arguments: {query: x}}\n"
    for options in ("{proxy: 'http://127.0.0.1:9'}", "{search_timeout: 3, search_backend: null}"):
        text = f"tools: [duckduckgo_search]\ntool_options: {options}\n{step}"
        diagnostics = validate_source(text)
        assert [d.code for d in diagnostics] == ["tool-unavailable", "unknown-tool"], options
        assert "needs 'ddgs'" in diagnostics[0].message
    with pytest.raises(ToolUnavailableError, match="needs 'ddgs'"):
        BuiltinToolProvider.build("duckduckgo_search", {"proxy": "http://127.0.0.1:9"})

    class OwnBackend:
        def search(self, query: str, **options: object) -> list[dict[str, str]]:
            return [{"title": "t", "href": "https://example.org/", "body": query}]

    built = BuiltinToolProvider.build(
        "duckduckgo_search", {"search_backend": OwnBackend(), "proxy": "http://127.0.0.1:9"}
    )
    assert isinstance(built, DuckDuckGoSearchTool)

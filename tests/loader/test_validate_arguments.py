"""Tool arguments are checked against each tool's JSON Schema, and state types against parameters.

Each test validates a real tree text and reads the located diagnostics; the tools are the real
built-ins (and a real @tool function), nothing is run.
"""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import Field

from jianmu_bt.loader import TreeLoadError, load_tree, validate_source
from jianmu_bt.tools import Tool, tool

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


def spot(text: str, line: int, needle: str) -> tuple[int, int]:
    """(line, column) of the first `needle` on 1-based `line` of `text`."""
    return line, text.splitlines()[line - 1].index(needle) + 1


def found(text: str, **options: object) -> list[tuple[str, str, int, int]]:
    return [(d.code, d.severity, d.line, d.col) for d in validate_source(text, **options)]


def tree(steps: str, state: str = "") -> str:
    """A tree with a few typed state fields and the given tool steps as a sequence."""
    return (
        "state:\n"
        "  count: {type: integer, default: 3}\n"
        "  ratio: {type: number, default: 0.5}\n"
        "  name: {type: string, default: a.txt}\n"
        "  items: {type: list, default: []}\n"
        "  info: {type: dict, default: {}}\n"
        f"{state}"
        "root:\n  sequence:\n    children:\n" + steps
    )


def test_the_newcomer_sees_all_three_mistakes_in_one_run_sorted_by_position():
    diagnostics = validate_source(NEWCOMER)
    assert [(d.code, (d.line, d.col)) for d in diagnostics] == [
        ("unknown-argument", spot(NEWCOMER, 10, "pth")),
        ("argument-type", spot(NEWCOMER, 11, "5}")),
        ("unknown-tool", spot(NEWCOMER, 12, "calculater")),
    ]
    pth, content, tool_name = diagnostics
    assert "has no argument 'pth' (did you mean 'path'?)" in pth.message
    assert "path" in pth.hint
    assert "argument 'content' takes a string, got the integer 5" in content.message
    assert content.hint == 'quote it to pass text: "5"'
    assert "unknown tool 'calculater' (did you mean 'calculator'?)" in tool_name.message
    assert all(d.is_error and d.hint for d in diagnostics)


def test_load_tree_refuses_the_same_tree_with_the_same_diagnostics():
    with pytest.raises(TreeLoadError) as caught:
        load_tree(NEWCOMER)
    assert caught.value.diagnostics == validate_source(NEWCOMER)


def test_a_missing_required_argument_is_located_at_arguments_or_at_the_tool():
    text = tree(
        "      - tool: {tool: read_file}\n"
        "      - tool: {tool: write_file, arguments: {path: x.txt}}\n"
    )
    diagnostics = validate_source(text)
    assert [(d.code, (d.line, d.col)) for d in diagnostics] == [
        ("missing-argument", spot(text, 10, "tool: read_file")),
        ("missing-argument", spot(text, 11, "arguments")),
    ]
    assert "needs the argument 'path'" in diagnostics[0].message
    assert "needs the argument 'content'" in diagnostics[1].message


def test_an_unknown_argument_of_an_open_schema_is_a_warning():
    # bash's schema does not close its properties: the tool may ignore the extra argument
    text = tree("      - tool: {tool: bash, arguments: {command: ls, cwd: /tmp}}\n")
    assert found(text) == [("unknown-argument", "warning", *spot(text, 10, "cwd"))]


def test_enum_and_range_violations_of_literals_are_errors_at_the_value():
    text = tree(
        "      - tool: {tool: write_file, arguments: {path: a, content: b, mode: apend}}\n"
        "      - tool: {tool: read_file, arguments: {path: a, max_lines: 0}}\n"
    )
    mode, lines = validate_source(text)
    assert (mode.code, (mode.line, mode.col)) == ("argument-value", spot(text, 10, "apend"))
    assert "'overwrite', 'append', 'create'" in mode.message
    assert "(did you mean 'append'?)" in mode.message
    assert (lines.code, (lines.line, lines.col)) == ("argument-value", spot(text, 11, "0}"))
    assert "argument 'max_lines' must be at least 1, got the integer 0" in lines.message


def test_a_whole_reference_is_checked_by_the_state_fields_declared_type():
    text = tree(
        '      - tool: {tool: write_file, arguments: {path: "{count}", content: x}}\n'
        '      - tool: {tool: write_file, arguments: {path: a, content: "{items}"}}\n'
        '      - tool: {tool: http_request, arguments: {url: "http://127.0.0.1/", '
        'timeout: "{info}"}}\n'
    )
    diagnostics = validate_source(text)
    assert [(d.code, d.severity, d.line) for d in diagnostics] == [
        ("argument-type", "error", 10),
        ("argument-type", "error", 11),
        ("argument-type", "error", 12),
    ]
    assert "'{count}' is the state key 'count', an integer field" in diagnostics[0].message
    # at the reference inside the quoted value
    assert (diagnostics[0].line, diagnostics[0].col) == spot(text, 10, "{count}")
    assert "takes a string" in diagnostics[1].message and "a list field" in diagnostics[1].message
    assert "takes a number" in diagnostics[2].message and "a dict field" in diagnostics[2].message


def test_allowed_flows_give_no_finding():
    text = tree(
        # interpolation inside text is text; a string field into a string; an integer into a
        # number; a path into a value has no declared type
        '      - tool: {tool: write_file, arguments: {path: "n{count}.txt", content: "{name}"}}\n'
        '      - tool: {tool: http_request, arguments: {url: "{name}", timeout: "{count}"}}\n'
        '      - tool: {tool: write_file, arguments: {path: "{info.path}", content: x}}\n'
    )
    assert found(text) == []


def test_flows_that_may_fail_at_run_time_are_warnings():
    text = tree(
        '      - tool: {tool: read_file, arguments: {path: a, max_lines: "{name}"}}\n'
        '      - tool: {tool: read_file, arguments: {path: a, max_lines: "{ratio}"}}\n'
        '      - tool: {tool: read_file, arguments: {path: a, start_line: "1{count}"}}\n'
    )
    assert [(c, s, line) for c, s, line, _ in found(text)] == [
        ("argument-type-maybe", "warning", 10),
        ("argument-type-maybe", "warning", 11),
        ("argument-type-maybe", "warning", 12),
    ]


def test_a_bare_value_fills_a_tools_primary_argument_only_when_it_is_text():
    text = tree(
        '      - tool: {tool: calculator, arguments: "{name}"}\n'
        '      - tool: {tool: calculator, arguments: "2 + 3"}\n'
        '      - tool: {tool: calculator, arguments: "{count}"}\n'
        "      - tool: {tool: calculator, arguments: [1, 2]}\n"
    )
    diagnostics = validate_source(text)
    assert [(d.code, d.line) for d in diagnostics] == [("argument-type", 12), ("argument-type", 13)]
    assert "takes named arguments (a mapping)" in diagnostics[0].message
    assert "`arguments: {expression: ...}`" in diagnostics[0].hint


def test_input_key_of_the_wrong_type_is_an_error():
    text = tree("      - tool: {tool: write_file, input_key: items}\n")
    assert found(text) == [("argument-type", "error", *spot(text, 10, "items"))]
    assert found(tree("      - tool: {tool: write_file, input_key: info}\n")) == []


@tool
def scale(value: int, factor: float = 2.0) -> float:
    """Scale a value."""
    return value * factor


@tool
def shout(text: str) -> str:
    """Upper-case text."""
    return text.upper()


def test_python_tools_are_checked_by_the_schema_of_their_signature():
    text = tree(
        "      - tool: {tool: scale, arguments: {value: many, factr: 2}}\n"
        '      - tool: {tool: shout, arguments: "{count}"}\n'
        '      - tool: {tool: shout, arguments: "{name}"}\n'
    )
    diagnostics = validate_source(text, tools=[scale, shout])
    assert [(d.code, d.line) for d in diagnostics] == [
        ("argument-type", 10),
        ("unknown-argument", 10),
        ("argument-type", 11),
    ]
    assert "argument 'value' takes an integer, got the string 'many'" in diagnostics[0].message
    assert "(did you mean 'factor'?)" in diagnostics[1].message


class LaterProvider:
    """A tool provider whose tools are known only once it started (as an MCP server's)."""

    async def initialize(self) -> None:
        return None

    def get_tools(self, **kwargs: object) -> list[object]:
        return []

    async def close(self) -> None:
        return None


def test_tools_known_only_at_run_time_are_not_checked():
    text = tree("      - tool: {tool: remote_thing, arguments: {anything: 1}}\n")
    assert [c for c, *_ in found(text, providers=[LaterProvider()])] == ["provider-tool"]


def test_without_jsonschema_literals_are_not_checked_and_validate_says_so(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "jsonschema", None)  # makes `import jsonschema` fail
    monkeypatch.delitem(sys.modules, "jianmu_bt.loader.json_schema", raising=False)
    text = tree(
        "      - tool: {tool: read_file, arguments: {path: a, max_lines: 0}}\n"
        "      - tool: {tool: read_file, arguments: {path: 5}}\n"
        "      - tool: {tool: read_file, arguments: {pth: a}}\n"
    )
    diagnostics = validate_source(text)
    # said once; a plain type and the checks that need no validator still run
    assert [(d.code, d.severity, d.line) for d in diagnostics] == [
        ("arguments-unchecked", "warning", 10),
        ("argument-type", "error", 11),
        ("unknown-argument", "error", 12),
    ]
    assert "jsonschema" in diagnostics[0].message


def test_a_literal_of_a_type_only_parameter_needs_no_validator_import():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from jianmu_bt.loader import validate_source\n"
        "found = validate_source(sys.argv[1])\n"
        "print([d.code for d in found], 'jsonschema' in sys.modules)\n"
    )
    text = tree("      - tool: {tool: write_file, arguments: {path: 5, content: x}}\n")
    done = subprocess.run(
        [sys.executable, "-c", code, text], capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "['argument-type'] False", done.stderr


def test_behaviour_args_are_bound_to_the_class_constructor_before_building():
    text = (
        "root:\n  sequence:\n    children:\n"
        '      - behaviour: {class: "py_trees.behaviours:TickCounter", '
        "args: {duratoin: 3, completion_status: null}}\n"
        '      - behaviour: {class: "py_trees.behaviours:Success", args: {x: 1}}\n'
        '      - behaviour: {class: "py_trees.behaviours:TickCounter", args: {duration: 2}}\n'
        '      - behaviour: {class: "py_trees.behaviours:Success"}\n'
    )
    diagnostics = validate_source(text)
    assert [(d.code, (d.line, d.col)) for d in diagnostics] == [
        ("unknown-argument", spot(text, 4, "duratoin")),
        ("unknown-argument", spot(text, 5, "x:")),
        ("missing-argument", spot(text, 6, "args")),
    ]
    assert "(did you mean 'duration'?)" in diagnostics[0].message
    assert "needs the argument 'completion_status'" in diagnostics[2].message


class Echo(Tool):
    """A custom Tool with the default input schema: one string."""

    name = "echo"

    def run(self, input: object) -> str:
        return f"got {input!r}"


def test_a_tool_of_one_string_input_given_no_arguments_is_not_an_error():
    text = tree(
        "      - tool: {name: Plain, tool: echo}\n"
        "      - tool: {name: Given, tool: echo, arguments: hello}\n"
        "      - tool: {name: Wrong, tool: echo, arguments: 5}\n"
    )
    assert [(c, line) for c, _, line, _ in found(text, tools=[Echo()])] == [("argument-type", 12)]
    loaded = load_tree(
        tree("      - tool: {name: Plain, tool: echo, output: name}\n"), tools=[Echo()]
    )
    try:
        result = loaded.run()
    finally:
        loaded.close()
    assert result.ok and result.state["name"] == "got {}"  # it runs, with an empty input


def test_a_behaviours_name_is_its_own_not_one_of_its_args():
    text = (
        "root:\n  sequence:\n    children:\n"
        '      - behaviour: {class: "py_trees.behaviours:Success", args: {nam: x}}\n'
        '      - behaviour: {class: "py_trees.behaviours:Success", args: {name: x}}\n'
    )
    diagnostics = validate_source(text)
    assert [(d.code, (d.line, d.col)) for d in diagnostics] == [
        ("unknown-argument", spot(text, 4, "nam")),
        ("unknown-argument", spot(text, 5, "name")),
    ]
    assert "takes no argument 'nam'" in diagnostics[0].message
    assert "did you mean" not in diagnostics[0].message  # `name` is not an argument to suggest
    assert "`args.name` is not an argument: the node's name is its own `name:`" in (
        diagnostics[1].message
    )


@tool
def tag(
    label: Annotated[str, Field(min_length=3)], names: Annotated[list[str], Field(max_length=1)]
) -> str:
    """Tag with a label."""
    return label


def test_a_yaml_date_and_a_wrong_size_are_named_as_what_they_are():
    text = tree(
        "      - tool: {tool: write_file, arguments: {path: 2024-01-31, content: x}}\n"
        "      - tool: {tool: tag, arguments: {label: ab, names: [a, b]}}\n"
    )
    diagnostics = validate_source(text, tools=[tag])
    assert [(d.code, d.line) for d in diagnostics] == [
        ("argument-type", 10),
        ("argument-value", 11),
        ("argument-value", 11),
    ]
    date, label, names = diagnostics
    assert date.message.endswith("argument 'path' takes a string, got the date 2024-01-31")
    assert date.hint == 'YAML reads this as a date: quote it to pass text: "2024-01-31"'
    assert label.message.endswith(
        "argument 'label' must have at least 3 characters, got the string 'ab' (2 characters)"
    )
    assert names.message.endswith("argument 'names' must have at most 1 item, got a list (2 items)")


def test_check_false_skips_the_graph_checks_but_not_the_argument_checks():
    text = tree("      - tool: {tool: read_file, arguments: {pth: a}}\n")
    assert [c for c, *_ in found(text, check=False)] == ["unknown-argument"]
    with pytest.raises(TreeLoadError, match="has no argument 'pth'"):
        load_tree(text, check=False)

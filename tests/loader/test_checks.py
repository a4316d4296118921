"""The static checks: each finding, its severity and its place."""

import pytest

from jianmu_bt import tool
from jianmu_bt.loader import TreeLoadError, load_tree, validate_source


def codes(text, **kwargs):
    return [(d.code, d.severity, d.line) for d in validate_source(text, **kwargs)]


@tool
def count_words(text: str) -> int:
    """Count words."""
    return len(text.split())


def test_a_read_of_an_unwritten_key_without_default_is_an_error():
    text = """
state:
  topic: {type: string}
root:
  condition: {check: "topic == 'x'"}
"""
    assert codes(text) == [("unwritten-read", "error", 5)]


@pytest.mark.parametrize(
    "declaration",
    ["{type: string, default: x}", "{type: string, input: true}", "{type: string, default: null}"],
)
def test_a_default_or_an_input_makes_the_read_fine(declaration):
    text = f"""
state:
  topic: {declaration}
root:
  condition: {{check: "topic == 'x'"}}
"""
    assert codes(text) == []


def test_a_key_written_by_another_node_is_fine():
    text = """
state:
  topic: {type: string}
root:
  sequence:
    children:
      - set: {values: {topic: x}}
      - condition: {check: "topic == 'x'"}
"""
    assert codes(text) == []


def test_check_false_skips_the_graph_checks():
    text = "state: {topic: string}\nroot: {condition: {check: \"topic == 'x'\"}}\n"
    assert codes(text, check=False) == []
    tree = load_tree(text, check=False)
    tree.close()


def test_literal_of_the_wrong_type_is_an_error_and_reducers_are_respected():
    text = """
state:
  count: {type: integer, default: 0}
  tags: {type: list, reducer: append, default: []}
root:
  sequence:
    children:
      - set: {values: {tags: one}}
      - set: {values: {count: "3"}}
      - set: {values: {count: [1]}}
"""
    assert codes(text) == [("type-mismatch", "error", 10)]


def test_copying_a_list_into_a_string_is_an_error_and_text_into_a_number_a_warning():
    text = """
state:
  items: {type: list, default: []}
  title: {type: string, default: ""}
  count: {type: integer, default: 0}
root:
  sequence:
    children:
      - set: {values: {title: "{items}"}}
      - set: {values: {count: "{title} items"}}
      - set: {values: {title: "{count}"}}
"""
    assert codes(text) == [
        ("type-mismatch", "error", 9),
        ("type-maybe", "warning", 10),
        ("type-mismatch", "error", 11),
    ]


def test_a_tools_declared_output_type_is_checked_against_the_field():
    text = """
state:
  words: {type: list, default: []}
  total: {type: integer, default: 0}
  label: {type: string, default: ""}
root:
  sequence:
    children:
      - tool: {tool: count_words, arguments: {text: "a b"}, output: words}
      - tool: {tool: calculator, arguments: "1 + 1", output: total}
      - tool: {tool: count_words, arguments: {text: "{label}"}, output: total}
"""
    found = codes(text, tools=[count_words])
    assert found == [("type-mismatch", "error", 9), ("type-maybe", "warning", 10)]


def test_an_agent_answer_into_a_list_field_is_an_error():
    text = """
llm: {provider: scripted, replies: ["x"]}
state:
  items: {type: list, default: []}
root:
  agent: {goal: go, output: items}
"""
    assert codes(text) == [("type-mismatch", "error", 6)]


@pytest.mark.parametrize(
    ("kind", "blocker", "line"),
    [
        ("selector", "{set: {values: {n: 1}}}", 7),
        ("selector", '{failure_is_success: {child: {condition: {check: "n > 0"}}}}', 7),
        ("selector", '{condition: {check: "1 < 2"}}', 7),
        ("sequence", '{success_is_failure: {child: {condition: {check: "n > 0"}}}}', 7),
        ("sequence", '{condition: {check: "False"}}', 7),
    ],
)
def test_children_after_an_always_ending_child_are_unreachable(kind, blocker, line):
    text = f"""
state: {{n: {{type: integer, default: 0}}}}
root:
  {kind}:
    children:
      - {blocker}
      - condition: {{check: "n > 5"}}
      - condition: {{check: "n > 6"}}
"""
    found = validate_source(text)
    assert [(d.code, d.severity, d.line) for d in found] == [("unreachable", "warning", line)]
    assert "2 child(ren) skipped" in found[0].message


def test_children_after_a_child_that_may_end_either_way_are_reachable():
    text = """
state: {n: {type: integer, default: 0}}
root:
  selector:
    children:
      - condition: {check: "n > 0"}
      - sequence: {children: [{set: {values: {n: 1}}}, {condition: {check: "n > 3"}}]}
      - set: {values: {n: 2}}
"""
    assert codes(text) == []


def test_duplicate_names_warn_and_duplicate_ids_fail():
    text = """
root:
  sequence:
    children:
      - condition: {name: Check, id: first, check: "True"}
      - condition: {name: Check, id: {id}, check: "True"}
"""
    assert codes(text.replace("{id}", "second")) == [("duplicate-name", "warning", 6)]
    # the second node is also named alike: both findings, in one run
    assert codes(text.replace("{id}", "first")) == [
        ("duplicate-name", "warning", 6),
        ("duplicate-id", "error", 6),
    ]


def test_warnings_do_not_stop_loading_and_are_the_trees_findings():
    tree = load_tree(
        "root: {selector: {children: [{set: {values: {final_answer: a}}}, "
        "{condition: {check: 'True'}}]}}"
    )
    try:
        assert [d.code for d in tree.findings] == ["unreachable"]
        assert tree.validate() == tree.findings
    finally:
        tree.close()


def test_unknown_keys_in_templates_conditions_and_outputs_are_errors():
    text = """
state: {topic: {type: string, default: x}}
tools: [calculator]
root:
  sequence:
    children:
      - condition: {check: "topik == 'x'"}
      - tool: {tool: calculator, arguments: "{topic} {nope}", output: reslt}
"""
    with pytest.raises(TreeLoadError) as caught:
        load_tree(text)
    found = [(d.line, d.col, d.message.split(";")[0]) for d in caught.value.diagnostics]
    assert found == [
        (7, 29, "unknown state key 'topik' (did you mean 'topic'?)"),
        (8, 54, "unknown state key 'nope'"),
        (8, 71, "unknown state key 'reslt'"),
    ]


def test_a_tree_with_llm_nodes_but_no_llm_gets_a_warning():
    assert codes("root: {agent: {goal: hi}}") == [("no-llm", "warning", 1)]


def test_text_and_tool_outputs_into_an_append_field_are_items_not_type_mismatches():
    text = """
state:
  order: {type: string, default: "A-1"}
  log: {type: list, default: [], reducer: append}
  plain: {type: list, default: []}
tools: [calculator]
root:
  sequence:
    children:
      - set: {values: {log: "triaged {order}"}}
      - tool: {tool: calculator, arguments: {expression: "1+1"}, output: log}
"""
    wrong = text + '      - set: {values: {plain: "triaged {order}"}}\n'
    assert [(p.line, p.code) for p in validate_source(wrong)] == [(12, "type-mismatch")]
    assert validate_source(text) == []
    with load_tree(text) as tree:
        assert tree.run().state["log"] == ["triaged A-1", "2"]

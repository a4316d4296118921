"""Subtrees: other files and named trees, key remapping, include cycles."""

import pytest

from jianmu_bt.loader import TreeLoadError, load_tree, validate_source

SUMMARY = """
version: 1
state:
  text: {type: string, input: true}
  size: {type: integer}
root:
  sequence:
    name: Measure
    children:
      - tool: {tool: calculator, arguments: "len('{text}')", output: raw}
      - set: {values: {size: "{raw}", note: "measured {text}"}}
      - condition: {check: "size > 0 and len(note) > 0"}
"""


def test_a_file_subtree_with_remap_renames_every_key_it_uses(write):
    write("measure.yaml", SUMMARY.replace("len('{text}')", "2 + 3"))
    main = write(
        "main.yaml",
        """
version: 1
state:
  document: {type: string, default: "hello"}
  count: {type: integer}
  raw_value: {type: string}
  remark: {type: string}
tools: [calculator]
root:
  sequence:
    children:
      - subtree:
          file: measure.yaml
          remap: {text: document, size: count, raw: raw_value, note: remark}
      - condition: {check: "count == 5 and remark == 'measured hello'"}
""",
    )
    tree = load_tree(main)
    try:
        result = tree.run()
        assert result.ok, result.reason
        assert result.state["count"] == 5 and result.state["remark"] == "measured hello"
        assert "text" not in tree.state.fields and "size" not in tree.state.fields
        subtree = tree.nodes["root/0"]
        assert subtree.name == "measure" and tree.nodes["root/0/0"].name == "Measure"
        assert tree.node_info("root/0").detail == "measure.yaml"
        assert tree.node_info("root/0/0/0").file.endswith("measure.yaml")
    finally:
        tree.close()


def test_an_included_files_state_fields_join_the_tree_under_their_new_names(write):
    write("measure.yaml", SUMMARY.replace("len('{text}')", "2 + 3"))
    main = write(
        "main.yaml",
        """
tools: [calculator]
state:
  raw: {type: string}
  note: {type: string}
root:
  subtree: {file: measure.yaml, remap: {text: topic}}
""",
    )
    tree = load_tree(main)
    try:
        assert tree.inputs == ["topic"]
        result = tree.run({"topic": "abc"})
        assert result.ok, result.reason
        assert result.state["size"] == 5 and result.state["note"] == "measured abc"
    finally:
        tree.close()


def test_a_named_tree_is_reused_with_different_remaps():
    tree = load_tree("""
state:
  a: {type: integer, default: 1}
  b: {type: integer, default: 10}
trees:
  double:
    set: {values: {value: "{value}"}}
  bump:
    sequence:
      children:
        - condition: {check: "value >= 0"}
        - subtree: {tree: double}
root:
  sequence:
    children:
      - subtree: {tree: bump, remap: {value: a}}
      - subtree: {tree: bump, remap: {value: b}}
      - condition: {check: "a == 1 and b == 10"}
""")
    try:
        result = tree.run()
        assert result.ok, result.reason
        ids = list(tree.nodes)
        assert "root/0/0/1/0" in ids and "root/1/0/1/0" in ids
        assert tree.nodes["root/0/0/0"].reads == {"a"}
        assert tree.nodes["root/1/0/0"].reads == {"b"}
        assert tree.nodes["root/1/0/1/0"].values == {"b": "{b}"}
    finally:
        tree.close()


def test_a_named_tree_of_another_file(write):
    write("lib.yaml", "trees:\n  ok:\n    set: {values: {flag: true}}\n")
    main = write(
        "main.yaml",
        "state: {done: {type: boolean, default: false}}\n"
        "root: {subtree: {file: lib.yaml, tree: ok, remap: {flag: done}}}\n",
    )
    tree = load_tree(main)
    try:
        assert tree.run().state["done"] is True
    finally:
        tree.close()


def test_a_cycle_of_named_trees_is_reported_with_its_chain():
    found = validate_source("""
trees:
  a: {subtree: {tree: b}}
  b: {sequence: {children: [{subtree: {tree: a}}]}}
root: {subtree: {tree: a}}
""")
    assert [(d.code, d.line, d.col) for d in found] == [("include-cycle", 4, 46)]
    assert "trees.a" not in found[0].message
    assert found[0].message.startswith("include cycle: <string> -> <string>#a -> <string>#b")


def test_a_file_including_itself_is_a_cycle(write):
    path = write("self.yaml", "root:\n  subtree: {file: self.yaml}\n")
    with pytest.raises(TreeLoadError) as caught:
        load_tree(path)
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.code == "include-cycle" and (diagnostic.line, diagnostic.col) == (2, 19)


def test_errors_inside_an_included_file_are_reported_in_that_file(write):
    write("sub.yaml", "root:\n  condition: {chek: 'True'}\n")
    main = write("main.yaml", "root:\n  subtree: {file: sub.yaml}\n")
    missing, typo = validate_source(main)
    assert missing.file.endswith("sub.yaml") and typo.file.endswith("sub.yaml")
    assert (missing.line, missing.col, missing.code) == (2, 3, "missing-key")
    assert (typo.line, typo.col) == (2, 15) and "unknown key 'chek'" in typo.message


def test_conflicting_state_declarations_across_files(write):
    write("sub.yaml", "state: {n: string}\nroot: {condition: {check: 'n is None'}}\n")
    main = write("main.yaml", "state: {n: integer}\nroot: {subtree: {file: sub.yaml}}\n")
    # the conflict, and (in the same run) the read of 'n' that nothing writes
    diagnostic, unwritten = validate_source(main)
    assert diagnostic.code == "state-conflict" and diagnostic.file.endswith("sub.yaml")
    assert "declared as integer" in diagnostic.message
    assert unwritten.code == "unwritten-read" and unwritten.file.endswith("sub.yaml")

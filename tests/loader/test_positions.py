"""YAML with positions: where keys and values start, and the YAML mistakes plain loaders hide."""

from jianmu_bt.loader import load_tree, validate_source
from jianmu_bt.loader.positions import parse_yaml

TEXT = """\
version: 1
root:
  sequence:
    children:
      - tool: {tool: calculator, arguments: "1 + 1"}
      - condition:
          check: >-
            True
"""


def test_positions_of_keys_and_values_are_one_based():
    data, source, problems = parse_yaml(TEXT, "t.yaml")
    assert problems == [] and data["version"] == 1
    children = ("root", "sequence", "children")
    assert source.key(("root",)) == (2, 1)
    assert source.value((*children, 0)) == (5, 9)
    assert source.key((*children, 0, "tool", "arguments")) == (5, 34)
    assert source.value((*children, 0, "tool", "arguments")) == (5, 45)
    assert source.inside((*children, 0, "tool", "arguments"), 2) == (5, 48)
    # a block scalar: positions inside it fall back to its start
    assert source.inside((*children, 1, "condition", "check"), 3) == (7, 18)
    # a path that is not there: the nearest existing parent
    assert source.value((*children, 1, "condition", "nothing")) == (7, 11)


def test_anchors_aliases_and_merge_keys_work():
    tree = load_tree(
        """
defaults: &retry_defaults
  num_failures: 2
root:
  retry:
    <<: *retry_defaults
    child: {condition: {check: "True"}}
""".replace("defaults: &retry_defaults\n  num_failures: 2\n", "").replace(
            "<<: *retry_defaults", "<<: {num_failures: 2}"
        )
    )
    try:
        assert tree.root.num_failures == 2
    finally:
        tree.close()
    shared = """
trees:
  check: &check {condition: {check: "True"}}
root: {sequence: {children: [*check, *check]}}
"""
    tree = load_tree(shared)
    try:
        assert tree.run().ok and list(tree.nodes) == ["root", "root/0", "root/1"]
    finally:
        tree.close()


def test_duplicate_keys_and_recursive_aliases_are_errors():
    found = validate_source("root: {condition: {check: 'True', check: 'False'}}")
    assert [(d.code, d.line, d.col) for d in found] == [("duplicate-key", 1, 35)]
    _, _, problems = parse_yaml("a: &x [1, *x]\n", "t.yaml")
    assert [p.code for p in problems] == ["yaml-alias"]


def test_python_tags_are_refused_not_executed():
    found = validate_source("root: !!python/object/apply:os.system ['echo hacked']")
    assert found[0].code == "yaml-tag" and "python/object" in found[0].message
    found = validate_source("root: {condition: {check: !!python/name:os.system ''}}")
    assert found[0].code == "yaml-syntax" and "python/name" in found[0].message

"""The set node: literals and templates written to state in one update."""

from py_trees.common import Status

from jianmu_bt.loader import load_tree
from jianmu_bt.nodes.set_values import SetValues


def test_templates_copy_values_with_their_type_and_build_text():
    tree = load_tree("""
state:
  source: {type: dict, default: {a: 1, b: [2, 3]}}
  clone: {type: dict}
  text: {type: string}
  items: {type: list, reducer: append, default: []}
root:
  set:
    values:
      clone: "{source}"
      text: "a={source.a} b={source.b} {{literal}}"
      items: ["{source.a}", 5]
""")
    try:
        result = tree.run()
        assert result.ok, result.reason
        assert result.state["clone"] == {"a": 1, "b": [2, 3]}
        assert result.state["text"] == "a=1 b=[2, 3] {literal}"
        assert result.state["items"] == [1, 5]
        assert isinstance(tree.root, SetValues) and tree.root.writes == {"clone", "text", "items"}
        assert tree.root.reads == {"source"}
    finally:
        tree.close()


def test_a_refused_value_fails_the_node_and_changes_nothing():
    tree = load_tree("""
state:
  source: {type: string, default: "not a number"}
  count: {type: integer, default: 1}
  note: {type: string, default: old}
root:
  set: {values: {note: new, count: "{source}"}}
""")
    try:
        result = tree.run()
        assert result.status == Status.FAILURE
        assert "invalid value for state field 'count'" in result.reason
        assert result.state["note"] == "old" and result.state["count"] == 1
    finally:
        tree.close()

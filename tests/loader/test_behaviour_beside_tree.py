"""A `behaviour:` class's module is found beside the tree file (as a tool's is), whatever the
working folder; an unknown class is an error at its `class:`, found by `jianmu validate`."""

from __future__ import annotations

import uuid

from jianmu_bt.loader import load_tree, validate_source

BEHAVIOUR = """
import py_trees


class Hello(py_trees.behaviour.Behaviour):
    def update(self):
        return py_trees.common.Status.SUCCESS
"""


def _tree(tmp_path, cls: str):
    module = f"beside_{uuid.uuid4().hex[:8]}"  # a fresh module: nothing cached in sys.modules
    (tmp_path / f"{module}.py").write_text(BEHAVIOUR)
    path = tmp_path / "tree.yaml"
    path.write_text(f'root:\n  behaviour: {{class: "{module}:{cls}"}}\n')
    return path


def test_a_behaviour_class_beside_the_tree_file_is_found(tmp_path, monkeypatch):
    monkeypatch.chdir("/")
    with load_tree(_tree(tmp_path, "Hello")) as tree:
        assert tree.run().ok


def test_a_missing_class_is_reported_at_its_class_key(tmp_path, monkeypatch):
    monkeypatch.chdir("/")
    path = _tree(tmp_path, "Nope")
    (problem,) = validate_source(path)
    assert (problem.line, problem.code) == (2, "import-error")
    assert "has no attribute 'Nope'" in problem.message

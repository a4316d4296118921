"""Paths written in a tree file are relative to the file, not to where the run starts."""

import os

from jianmu_bt.loader import load_tree

TREE = """
state:
  text: {type: string}
tools: [{builtin: read_file, options: {workspace: notes}}]
tool_options: {workspace: data}
root:
  sequence:
    children:
      - tool: {tool: read_file, arguments: {path: a.txt}, output: text}
"""


def test_a_relative_workspace_is_taken_from_the_tree_files_folder(tmp_path, monkeypatch):
    project = tmp_path / "project"
    (project / "notes").mkdir(parents=True)
    (project / "notes" / "a.txt").write_text("from the notes folder")
    (project / "data").mkdir()
    (project / "tree.yaml").write_text(TREE)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with load_tree(project / "tree.yaml") as tree:
        result = tree.run()
        assert result.ok, result.reason
        assert "from the notes folder" in str(tree.state.get("text"))
        # Built-ins built on use take the file-level options, also anchored at the file.
        workspace = tree.toolset.get("read_file").workspace
        assert os.path.samefile(str(workspace.root), project / "notes")

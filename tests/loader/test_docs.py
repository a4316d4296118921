"""The runnable example in docs/yaml.md runs and prints what the page says it prints."""

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "yaml.md"


def test_the_example_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    example = next(block for block in blocks if "tree.run(" in block)
    exec(compile(example, str(DOC), "exec"), {"__name__": "docs_yaml_example"})
    promised = re.findall(r"^    # (.+)$", example, re.M)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == promised[0]
    assert printed[1].startswith("['root', 'root/0', 'root/1']")


def test_every_kind_is_documented():
    from jianmu_bt.loader import node_kinds

    text = DOC.read_text(encoding="utf-8")
    missing = [kind for kind in node_kinds() if f"`{kind}`" not in text]
    assert missing == []

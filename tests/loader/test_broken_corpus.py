"""Every broken file of the corpus gives exactly its located messages, and no traceback.

Each file in broken/ ends with `# expect: file:line:col: severity: message` lines (at the end,
so they do not move the lines they point at).
"""

from pathlib import Path

import pytest

from jianmu_bt.loader import TreeLoadError, load_tree, validate_source

BROKEN = Path(__file__).parent / "broken"
FILES = sorted(BROKEN.glob("*.yaml"))


def expected(path: Path) -> list[str]:
    prefix = "# expect: "
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line[len(prefix) :] for line in lines if line.startswith(prefix)]


def shown(diagnostic) -> str:
    return f"{diagnostic.file}:{diagnostic.line}:{diagnostic.col}: {diagnostic.severity}: " + (
        diagnostic.message
    )


def test_the_corpus_covers_at_least_fifteen_mistakes():
    assert len(FILES) >= 15
    assert all(expected(path) for path in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_validate_source_reports_each_mistake_where_it_is(path, monkeypatch):
    monkeypatch.chdir(BROKEN)  # file names in messages are then plain names
    assert [shown(d) for d in validate_source(Path(path.name))] == expected(path)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_load_tree_raises_one_error_listing_every_problem(path, monkeypatch):
    monkeypatch.chdir(BROKEN)
    with pytest.raises(TreeLoadError) as caught:
        load_tree(path.name)
    assert str(caught.value).splitlines() == expected(path)
    assert [shown(d) for d in caught.value.diagnostics] == expected(path)
    assert "Traceback" not in str(caught.value)


def test_all_errors_of_a_file_are_reported_together(monkeypatch):
    monkeypatch.chdir(BROKEN)
    codes = [d.code for d in validate_source("several_errors.yaml")]
    assert codes == ["unknown-key", "invalid-value", "unknown-kind"]

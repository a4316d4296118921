"""docs/guard.md runs as written (its runnable blocks print what the page says)."""

from __future__ import annotations

from runnable_docs import run_blocks


def test_every_runnable_block_prints_what_the_page_says(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run_blocks("guard.md", capsys)

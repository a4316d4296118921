"""The Python example of docs/viewer.md runs as written and prints what the page says."""

from __future__ import annotations

import re
import subprocess
import sys

from viewer_helpers import REPO


def test_the_example_runs_and_prints_what_the_page_says():
    text = (REPO / "docs" / "viewer.md").read_text()
    code, printed = re.search(r"```python\n(.*?)```\nprints\n```\n(.*?)```", text, re.S).groups()
    finished = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout == printed
    for picture in re.findall(r"\]\((viewer-[a-z]+\.png)\)", text):
        assert (REPO / "docs" / picture).is_file(), picture

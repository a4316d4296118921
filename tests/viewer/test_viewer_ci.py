"""The browser tests skip without Chromium, unless JIANMU_REQUIRE_BROWSER=1 (CI) makes that a
failure: checked by running pytest on them with a Chromium path that does not exist."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from viewer_helpers import REPO

BROWSER_TESTS = REPO / "tests" / "viewer" / "test_viewer_browser.py"


@pytest.mark.parametrize(
    ("required", "outcome", "code"),
    # 2: collection failed (pytest's "interrupted"); 5: no test ran (all skipped)
    [("1", "error", 2), ("", "skipped", 5)],
)
def test_missing_chromium_skips_unless_required(tmp_path, required, outcome, code):
    env = {
        **os.environ,
        "JIANMU_CHROMIUM": str(tmp_path / "no-chromium"),
        "JIANMU_REQUIRE_BROWSER": required,
    }
    finished = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rs",
            "-n",
            "0",
            "-p",
            "no:cacheprovider",
            BROWSER_TESTS,
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    last = finished.stdout.strip().splitlines()[-1]
    assert f"1 {outcome}" in last, finished.stdout
    assert "no Chromium at" in finished.stdout
    assert finished.returncode == code

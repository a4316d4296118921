"""The pytest plugin: declared as a `pytest11` entry point, light to import, and its fixtures
run the documented example (examples/testing) in a fresh pytest found through that entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from fake_distribution import write_distribution
from overlay_helpers import EXAMPLES, REPO

DIVERGING_TEST = """\
from pathlib import Path

EXAMPLES = Path({examples!r})


def test_a_diverging_replay_fails_clearly(jianmu_run):
    jianmu_run(
        EXAMPLES / "research.yaml",
        overlay=EXAMPLES / "research.overlay.yaml",
        inputs={{"url": "https://example.org/elsewhere"}},
    )
"""


def entry_point() -> str:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    value: str = pyproject["project"]["entry-points"]["pytest11"]["jianmu"]
    return value


def test_the_plugin_is_a_pytest11_entry_point():
    assert entry_point() == "jianmu_bt.testing.plugin"


def test_importing_the_plugin_loads_no_layer_of_the_package():
    script = (
        "import json, sys\nimport jianmu_bt.testing.plugin\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('jianmu_bt'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(done.stdout) == [
        "jianmu_bt",
        "jianmu_bt._lazy",
        "jianmu_bt._version",
        "jianmu_bt.testing",
        "jianmu_bt.testing.plugin",
    ]


def test_a_fresh_pytest_finds_the_fixtures_through_the_entry_point(tmp_path: Path):
    # A distribution's metadata that declares only the entry point, as installing the project
    # writes it: pytest loads plugins from `pytest11` entry points on start-up.
    probe = write_distribution(
        tmp_path / "site", "jianmu-plugin-probe", f"[pytest11]\njianmu = {entry_point()}\n"
    )
    diverging = tmp_path / "test_diverging.py"
    diverging.write_text(DIVERGING_TEST.format(examples=str(EXAMPLES)), encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(EXAMPLES / "test_research.py"),
            str(EXAMPLES / "test_held_calls.py"),
            str(diverging),
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(probe), str(REPO)])},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = done.stdout
    assert "1 failed, 5 passed" in out, out + done.stderr
    assert "the run made calls its recording did not have:" in out
    assert (
        "replay diverged: call 1 of 'http_request' with arguments "
        '{"url": "https://example.org/elsewhere"} is not in the recording' in out
    )
    assert "Traceback" not in out

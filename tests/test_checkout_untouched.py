"""The suite never writes the checkout's run store, and a session that does fails.

tests/conftest.py points `$JIANMU_STORE` at a temporary folder and registers `CheckoutGuard`
(tests/checkout_guard.py) on the checkout's `.jianmu/`. These tests run the guard in a nested
pytest session over a throwaway "checkout", and check the default store of this session.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from checkout_guard import differences, snapshot

from jianmu_bt.store import default_store

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

CONFTEST = """
from checkout_guard import CheckoutGuard

def pytest_configure(config):
    config.pluginmanager.register(CheckoutGuard(config.rootpath / ".jianmu"), "checkout-guard")
"""


def nested_session(checkout: Path, test: str) -> subprocess.CompletedProcess[str]:
    """Run `test` (a test module's source) under the guard in a session rooted at `checkout`."""
    (checkout / "pytest.ini").write_text("[pytest]\n")
    (checkout / "conftest.py").write_text(CONFTEST)
    (checkout / "test_it.py").write_text(textwrap.dedent(test))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_it.py"],
        cwd=checkout,
        env={**os.environ, "PYTHONPATH": f"{HERE}{os.pathsep}{REPO}"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_session_that_writes_the_checkouts_store_fails_and_names_the_file(tmp_path):
    writes = """
        from pathlib import Path

        def test_writes():
            Path(".jianmu").mkdir()
            Path(".jianmu/runs.db").write_bytes(b"runs")
    """
    done = nested_session(tmp_path, writes)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 passed" in done.stdout  # the test passed; the session failed
    assert "the tests wrote into the checkout" in done.stdout
    assert "created runs.db" in done.stdout


def test_a_session_that_changes_an_existing_store_fails_too(tmp_path):
    (tmp_path / ".jianmu").mkdir()
    (tmp_path / ".jianmu" / "runs.db").write_bytes(b"old runs")
    changes = """
        from pathlib import Path

        def test_changes():
            Path(".jianmu/runs.db").write_bytes(b"more runs")
    """
    done = nested_session(tmp_path, changes)
    assert done.returncode == 1 and "changed runs.db" in done.stdout, done.stdout


def test_a_session_that_leaves_the_checkout_alone_passes(tmp_path):
    done = nested_session(tmp_path, "def test_nothing():\n    pass\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (tmp_path / ".jianmu").exists()


def test_snapshots_tell_created_changed_and_removed_files(tmp_path):
    folder = tmp_path / ".jianmu"
    assert snapshot(folder) == {}
    folder.mkdir()
    (folder / "runs.db").write_bytes(b"a")
    (folder / "old.db").write_bytes(b"b")
    before = snapshot(folder)
    (folder / "runs.db").write_bytes(b"longer")
    (folder / "old.db").unlink()
    (folder / "runs.db-wal").write_bytes(b"c")
    assert differences(before, snapshot(folder)) == [
        "changed runs.db",
        "created runs.db-wal",
        "removed old.db",
    ]


def test_runs_without_a_named_store_go_outside_the_checkout(tmp_path):
    # This session's default store, and that of a `jianmu run` it starts in the checkout.
    assert not Path(default_store()).resolve().is_relative_to(REPO)
    tree = tmp_path / "tree.yaml"
    tree.write_text(
        "version: 1\nname: T\ntools: [calculator]\n"
        "root:\n  tool: {tool: calculator, arguments: {expression: '1 + 1'}}\n"
    )
    before = snapshot(REPO / ".jianmu")
    done = subprocess.run(
        [sys.executable, "-m", "jianmu_bt.cli", "run", str(tree)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "TERM": "dumb"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert Path(os.environ["JIANMU_STORE"]).exists()
    assert differences(before, snapshot(REPO / ".jianmu")) == []

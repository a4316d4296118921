"""A pytest plugin failing the session when the tests created or changed the checkout's run store.

Runs made without a named store go to `$JIANMU_STORE`, which tests/conftest.py points at a
temporary folder; a test that drops the variable (a subprocess given a fresh environment, say) and
runs in the checkout would write `.jianmu/` there. `CheckoutGuard` notes what the folder holds when
the session starts and, at its end, fails the session and names every file created, changed or
removed. Registered once per session, by the process that is not a pytest-xdist worker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

Snapshot = dict[str, tuple[int, int]]
"""Path relative to the watched folder -> (size, modification time in ns)."""


def snapshot(folder: Path) -> Snapshot:
    """Every file under `folder` (none when it does not exist) with its size and mtime."""
    if not folder.is_dir():
        return {}
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            facts = path.stat()
            found[str(path.relative_to(folder))] = (facts.st_size, facts.st_mtime_ns)
    return found


def differences(before: Snapshot, after: Snapshot) -> list[str]:
    """One line per file created, changed or removed between two snapshots."""
    lines = [f"created {name}" for name in after if name not in before]
    lines += [f"changed {name}" for name in after if name in before and after[name] != before[name]]
    lines += [f"removed {name}" for name in before if name not in after]
    return sorted(lines)


class CheckoutGuard:
    """Fails the session when `folder` differs at its end from what it was at its start."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.existed = folder.exists()
        self.before = snapshot(folder)
        self.found: list[str] = []

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Compare the folder with its start; any difference fails the session."""
        self.found = differences(self.before, snapshot(self.folder))
        if not self.existed and self.folder.exists() and not self.found:
            self.found = ["created the folder"]
        if self.found:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """Name what changed, and why it matters."""
        if not self.found:
            return
        terminalreporter.section("the tests wrote into the checkout", sep="!", red=True)
        terminalreporter.write_line(
            f"{self.folder}: a test ran with the default run store in the checkout (a subprocess "
            "given a fresh environment without $JIANMU_STORE?); it must use tmp_path"
        )
        for line in self.found:
            terminalreporter.write_line(f"  {line}")

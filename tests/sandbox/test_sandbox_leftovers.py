"""The leftover check itself: finding a sandbox's cgroups must survive cgroups that vanish.

Other sandboxes and Docker containers create and remove cgroups all the time, so a directory
listed a moment ago may be gone when the walk enters it. That once raised FileNotFoundError out
of `assert_nothing_left`; a vanished directory simply holds nothing of ours.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from sandbox_helpers import sandbox_cgroups

from jianmu_bt.sandbox import LocalSandbox


def test_cgroups_that_vanish_mid_walk_are_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    sandbox = LocalSandbox()
    ours = tmp_path / "system.slice" / f"jianmu-sandbox-{sandbox.id}-1"
    ours.mkdir(parents=True)
    for name in ("docker-aaa.scope", "docker-bbb.scope"):
        (tmp_path / "system.slice" / name / "child").mkdir(parents=True)
    real_scandir = os.scandir

    def vanishing_scandir(path: int | str | os.PathLike[str] = ".") -> object:
        if not isinstance(path, int) and "docker-" in os.fspath(path):  # removed just now
            shutil.rmtree(path, ignore_errors=True)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", vanishing_scandir)
    assert sandbox_cgroups(sandbox, root=tmp_path) == [ours]
    monkeypatch.undo()
    assert sandbox_cgroups(sandbox, root=tmp_path) == [ours]
    shutil.rmtree(sandbox.workspace)


def test_the_real_cgroup_tree_has_nothing_of_a_new_sandbox():
    sandbox = LocalSandbox()
    assert sandbox_cgroups(sandbox) == []
    shutil.rmtree(sandbox.workspace)

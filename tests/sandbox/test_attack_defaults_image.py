"""Attack class 14: `.ci/setup-docker.sh` must build a working image from any Python.

Run from a virtual environment, the script used to copy the venv's `python` (a link plus a
pyvenv.cfg that the image lacks) and put the packages under the venv's path, which the image's
interpreter never reads. Its Python part now resolves the base installation and places every
dependency in that installation's own site-packages. These tests run that Python part, taken from
the script as it is, with the interpreter of this test run (the project's virtual environment, or
a throwaway one), first in `--plan` mode, then building a real root file system and running its
Python in a chroot (root only) — no Docker engine needed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
SCRIPT = PROJECT / ".ci" / "setup-docker.sh"


def rootfs_program(tmp_path: Path) -> Path:
    """The script's root-file-system builder (its `<<'ROOTFS'` here-document) as a file."""
    found = re.search(r"<<'ROOTFS'\n(.*?)\nROOTFS\n", SCRIPT.read_text(), re.S)
    assert found, "the ROOTFS here-document is missing from .ci/setup-docker.sh"
    program = tmp_path / "rootfs.py"
    program.write_text(found.group(1))
    return program


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A virtual environment's python that can import jianmu-bt's dependencies."""
    if sys.prefix != sys.base_prefix:
        return sys.executable  # the tests already run in one (the README's .venv)
    target = tmp_path_factory.mktemp("venv")
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(target)],
        check=True,
    )
    return str(target / "bin" / "python")


def run_plan(python: str, tmp_path: Path) -> dict:
    done = subprocess.run(
        [python, str(rootfs_program(tmp_path)), "--plan", str(PROJECT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def venv_facts(python: str) -> dict:
    code = (
        "import json, os, sys; print(json.dumps({'prefix': os.path.realpath(sys.prefix), "
        "'base_prefix': os.path.realpath(sys.base_prefix), 'version': sys.version, "
        "'base_exe': os.path.realpath(sys._base_executable)}))"
    )
    return json.loads(subprocess.check_output([python, "-c", code], text=True))


def test_from_a_venv_the_plan_uses_the_base_installation(venv_python, tmp_path):
    facts = venv_facts(venv_python)
    assert facts["prefix"] != facts["base_prefix"], "not a virtual environment"
    plan = run_plan(venv_python, tmp_path)
    venv = facts["prefix"] + "/"
    assert plan["in_venv"] is False and plan["version"] == facts["version"]
    assert plan["executable"] == facts["base_exe"]
    assert os.path.realpath(plan["prefix"]) == facts["base_prefix"]
    for key in ("executable", "stdlib", "purelib"):
        assert not os.path.realpath(plan[key]).startswith(venv), f"{key} is inside the venv"
    assert os.path.realpath(plan["purelib"]).startswith(facts["base_prefix"] + "/")
    assert plan["purelib"] in plan["path"]  # a directory the base interpreter really reads
    # Every dependency file has a place relative to site-packages, wherever it is installed here.
    assert plan["files"], "no dependency files found"
    assert all(not rel.startswith(("/", "..")) for rel in plan["files"])
    assert "pydantic/__init__.py" in plan["files"]
    assert "anyio/__init__.py" in plan["files"]


@pytest.mark.skipif(os.geteuid() != 0, reason="chroot needs root")
@pytest.mark.skipif(not Path("/bin/busybox").exists(), reason="busybox-static is not installed")
@pytest.mark.skipif(shutil.which("chroot") is None, reason="no chroot")
def test_from_a_venv_the_built_root_file_system_runs_python(venv_python, tmp_path):
    root = tmp_path / "rootfs"
    root.mkdir()
    done = subprocess.run(
        [venv_python, str(rootfs_program(tmp_path)), str(root), str(PROJECT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    venv = venv_facts(venv_python)["prefix"]
    assert not (root / venv.lstrip("/")).exists(), "the image holds the venv's paths"
    check = (
        "import sys, pydantic, anyio, yaml, jianmu_bt.sandbox.worker, jianmu_bt.tools.builtin.bash;"
        " print(sys.prefix, jianmu_bt.__file__)"
    )
    chroot = [shutil.which("chroot"), "--userspec=65534:65534", str(root)]
    ran = subprocess.run(
        [*chroot, "/usr/local/bin/python3", "-I", "-c", check],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/local/bin:/usr/bin:/bin"},
    )
    assert ran.returncode == 0, ran.stderr
    prefix, package = ran.stdout.split()
    assert prefix == venv_facts(venv_python)["base_prefix"] and venv not in package

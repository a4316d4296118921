"""Attack class 10 (mounts), LocalSandbox: secret files in the code directories it binds in.

As root, LocalSandbox hides the directories the sandbox user could not enter and binds the code
to import back in: whole sys.path folders. A world-readable `.env` or key file in one of them
was then readable by the sandboxed `nobody` user. Every match of `plan.SECRET_PATTERNS` in those
folders is now covered (a file reads as empty, a folder is empty); the code itself stays.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_helpers import ROOT

from jianmu_bt.sandbox import LocalSandbox, SandboxLimits, secret_files
from jianmu_bt.sandbox.plan import IsolationPlan, SecretScanError, installation_dirs
from jianmu_bt.sandbox.secret_files import secrets_under
from jianmu_bt.tools.builtin.bash import BashTool
from jianmu_bt.tools.builtin.python_repl import PythonREPLTool

pytestmark = pytest.mark.anyio

CANARY = "CANARY-jianmu-local-secret-0123456789"
SECRETS = [".env", "deploy/prod.env", "certs/server.pem", ".ssh/id_rsa", "nested/.aws/credentials"]
root_only = pytest.mark.skipif(not ROOT, reason="LocalSandbox binds code in (and covers) as root")


def _write(path: Path, text: str = CANARY) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def code_dir(tmp_path: Path) -> Iterator[Path]:
    """A world-readable directory on sys.path with a module and secret files in it."""
    folder = tmp_path / "on_path"
    _write(folder / "helper_mod_jianmu.py", "VALUE = 42\n")
    for name in SECRETS:
        _write(folder / name)
    for path in [tmp_path, *folder.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    os.chmod(folder, 0o755)
    sys.path.insert(0, str(folder))
    try:
        yield folder
    finally:
        sys.path.remove(str(folder))


def reads(folder: Path) -> str:
    """python_repl code that reads every file of `folder` it can and returns what it saw."""
    return (
        "import os\n"
        "seen = {}\n"
        f"for top, dirs, files in os.walk({str(folder)!r}):\n"
        "    for name in files:\n"
        "        try:\n"
        "            seen[name] = open(os.path.join(top, name)).read()\n"
        "        except OSError as exc:\n"
        "            seen[name] = repr(exc)\n"
        "seen"
    )


@root_only
async def test_python_repl_cannot_read_secrets_in_a_folder_on_sys_path(code_dir: Path):
    async with LocalSandbox(SandboxLimits(timeout=20)) as sandbox:
        result = await PythonREPLTool(runner=sandbox).call({"code": reads(code_dir)})
        shell = await BashTool(runner=sandbox).call(
            {"command": f"cat {code_dir}/.env {code_dir}/.ssh/id_rsa 2>&1; ls -A {code_dir}/.ssh"}
        )
        report = sandbox.isolation.describe()
    assert result.ok, result.error
    assert CANARY not in str(result.output) and CANARY not in str(shell.output)
    assert "VALUE = 42" in result.output["value"]  # the code is still there
    assert eval(result.output["value"])[".env"] == ""  # covered: reads as empty
    assert shell.output["stdout"].endswith("No such file or directory\n")  # an empty .ssh
    covered = re.search(r"secret files in the code directories covered \((\d+)\)", report)
    assert covered and int(covered.group(1)) >= len(SECRETS), report  # (.git/config counts too)
    assert CANARY in (code_dir / ".env").read_text()  # the host's file is untouched


@root_only
async def test_secret_patterns_decide_what_is_covered(code_dir: Path):
    async with LocalSandbox(SandboxLimits(timeout=20), secret_patterns=[".env"]) as sandbox:
        result = await PythonREPLTool(runner=sandbox).call({"code": reads(code_dir)})
    seen = eval(result.output["value"])
    assert seen[".env"] == "" and seen["server.pem"] == CANARY


def test_secrets_under_finds_files_folders_and_where_links_lead(tmp_path: Path):
    code = tmp_path / "code"
    for name in SECRETS:
        _write(code / name)
    _write(code / "venv" / "lib" / "cert.pem")  # an installation inside: never entered
    _write(tmp_path / "elsewhere" / "real_values.txt")
    _write(tmp_path / "elsewhere" / ".aws" / "config")
    (code / ".env.link").symlink_to(tmp_path / "elsewhere" / "real_values.txt")
    (code / "innocent.txt").symlink_to(tmp_path / "elsewhere" / ".aws" / "config")
    found = secrets_under([str(code)], skip=[str(code / "venv")])
    real = os.path.realpath(tmp_path)
    assert found == {
        f"{real}/code/.env": False,
        f"{real}/code/deploy/prod.env": False,
        f"{real}/code/certs/server.pem": False,
        f"{real}/code/.ssh": True,
        f"{real}/code/nested/.aws": True,
        f"{real}/elsewhere/real_values.txt": False,
        f"{real}/elsewhere/.aws/config": False,
    }
    assert secrets_under([str(code / ".ssh" / "id_rsa")]) == {f"{real}/code/.ssh/id_rsa": False}
    assert secrets_under([str(code)], patterns=()) == {}


def test_the_search_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for n in range(30):
        _write(tmp_path / f"dir{n}" / "file.txt", "x")
    monkeypatch.setattr(secret_files, "MAX_SCANNED_ENTRIES", 20)
    with pytest.raises(SecretScanError, match="more than 20 entries"):
        secrets_under([str(tmp_path)])


def test_the_python_installation_and_the_workspace_are_not_searched(tmp_path: Path):
    plan = IsolationPlan(as_root=True, user=(65534, 65534, "nobody"), network=False,
                         private_mounts=True)  # fmt: skip
    config = plan.mount_config(str(tmp_path), "64m")
    assert config is not None
    secrets = config["secrets"]
    installation = installation_dirs()
    assert os.path.realpath(sys.prefix) in secrets["skip"] and str(tmp_path) in secrets["skip"]
    for root in secrets["roots"]:
        assert root not in installation and root != str(tmp_path)
        assert not root.startswith(os.path.realpath(sys.base_prefix) + "/lib/")
    assert set(secrets["roots"]) <= set(config["keep"])
    not_root = IsolationPlan(as_root=False, user=None, network=False, private_mounts=False)
    assert not_root.mount_config(str(tmp_path), "64m") is None

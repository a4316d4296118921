"""Attack class 10 (mounts): a Docker container sees only the code it needs, read-only, and never
a secret file.

The plan is checked without an engine: for a temporary project full of secrets (a `.env` beside
the package, secrets nested in it, credential directories, symbolic links that lead to secrets),
every secret the container could reach is covered by an empty read-only mount, the project
directory itself is not mounted, and everything but the workspace is read-only. With an engine,
a container really reads nothing of them.
"""

from __future__ import annotations

import fnmatch
import importlib
import os
import sys
from pathlib import Path

import pytest
from sandbox_helpers import IMAGE

from jianmu_bt.sandbox import DockerSandbox, SandboxLimits
from jianmu_bt.sandbox.plan import (
    SECRET_PATTERNS,
    MountPlan,
    SecretScanError,
    find_secrets,
    secret_match,
    shared_code_roots,
)
from jianmu_bt.tools.builtin.bash import BashTool

pytestmark = pytest.mark.anyio

CANARY = "CANARY-jianmu-secret-0123456789"
#: Secret files (relative to the package) and what they are; every one holds the canary.
PACKAGE_SECRETS = [
    ".env",
    ".env.production",
    "deploy/prod.env",
    "deep/er/still/id_rsa",
    "deep/id_ed25519.pub",
    "certs/server.pem",
    "certs/API.KEY",
    ".ssh/config",
    ".aws/credentials",
    ".git/config",
    ".git-credentials",
    ".netrc",
    ".npmrc",
    ".pypirc",
    "keys.p12",
    ".config/gcloud/application_default_credentials.json",
    "nested/.docker/config.json",
]
WORKSPACE_SECRETS = [".env", "app/.env.local", "home/.ssh/id_rsa", "infra/terraform.tfstate"]


def _write(path: Path, text: str = CANARY) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def project(tmp_path: Path) -> dict[str, Path]:
    """A project: a package with secrets in it, a .env beside it, links to secrets, a workspace."""
    root = tmp_path / "proj"
    package = root / "leaky_pkg"
    _write(package / "__init__.py", "VALUE = 42\n")
    _write(package / "tools.py", "def f():\n    return 1\n")
    _write(package / "data" / "table.csv", "a,b\n1,2\n")
    for name in PACKAGE_SECRETS:
        _write(package / name)
    _write(root / ".env")  # beside the package: the project directory must not be mounted
    _write(root / "settings.toml", "harmless but not needed\n")
    outside = tmp_path / "home" / ".ssh" / "id_rsa"
    _write(outside)
    # Links: to a secret outside every mount, to one inside the package, and a secret-named one.
    (package / "innocent.txt").symlink_to(outside)
    (package / "looks_fine").symlink_to(package / "deep" / "er" / "still" / "id_rsa")
    (package / "project_env").symlink_to(root / ".env")
    _write(package / "data" / "real_values.txt")
    (package / "data" / ".env").symlink_to(package / "data" / "real_values.txt")
    workspace = tmp_path / "ws"
    for name in WORKSPACE_SECRETS:
        _write(workspace / name)
    _write(workspace / "notes.md", "work\n")
    return {"root": root, "package": package, "workspace": workspace, "outside": outside}


def _is_secret(path: str) -> bool:
    """An independent check: any component (or pair) of the path matches a pattern."""
    parts = path.lower().split("/")
    for pattern in SECRET_PATTERNS:
        wanted = pattern.lower().split("/")
        for end in range(len(wanted), len(parts) + 1):
            window = parts[end - len(wanted) : end]
            if all(fnmatch.fnmatchcase(a, b) for a, b in zip(window, wanted, strict=True)):
                return True
    return False


def _container_view(plan: MountPlan, host: str) -> list[str]:
    """Where a host path shows up in the container (per bind mount that holds it)."""
    found = []
    for mount in plan.mounts:
        if mount.target in plan.hidden:
            continue
        if host == mount.source or host.startswith(mount.source + "/"):
            found.append(mount.target + host[len(mount.source) :])
    return found


def _covered(plan: MountPlan, inside: str) -> bool:
    return any(inside == h or inside.startswith(h + "/") for h in plan.hidden)


def test_every_secret_the_container_could_reach_is_covered(project):
    plan = MountPlan.build(str(project["workspace"]), code=[str(project["package"])])
    checked = 0
    for source in (project["package"], project["workspace"]):
        for dirpath, dirnames, filenames in os.walk(source):
            for name in dirnames + filenames:
                host = os.path.join(dirpath, name)
                real = os.path.realpath(host)
                if not (_is_secret(host) or _is_secret(real)):
                    continue
                if not os.path.islink(host):
                    for inside in _container_view(plan, host):
                        checked += 1
                        assert _covered(plan, inside), f"{inside} ({host}) is visible"
                # A link leads where the container resolves it: covered, or outside every mount.
                for inside in _container_view(plan, real):
                    assert _covered(plan, inside), f"{host} leads to visible {inside}"
    assert checked >= 10
    data_file = str(project["package"] / "data" / "real_values.txt")  # behind a link named .env
    assert _covered(plan, data_file)
    assert not _covered(plan, str(project["package"] / "tools.py"))
    assert not _covered(plan, "/workspace/notes.md")


def test_only_the_package_is_mounted_and_everything_but_the_workspace_is_read_only(project):
    plan = MountPlan.build(str(project["workspace"]), code=[str(project["package"])])
    binds = [m for m in plan.mounts if m.target not in plan.hidden]
    assert {m.source for m in binds} == {
        str(project["package"]),
        os.path.realpath(project["workspace"]),
    }
    assert str(project["root"]) not in {m.source for m in binds}  # no project dir, no .env beside
    assert _container_view(plan, str(project["root"] / ".env")) == []
    assert _container_view(plan, str(project["outside"])) == []
    for mount in plan.mounts:
        if mount.target == "/workspace":
            assert not mount.read_only
            continue
        assert mount.read_only
        docker = mount.to_docker()
        assert docker["ReadOnly"] is True
        if mount.source is None:
            assert docker["Type"] == "tmpfs"
        elif mount.target in plan.hidden:
            assert os.path.getsize(mount.source) == 0
    assert plan.python_path == (str(project["root"]),)


def test_a_secret_code_root_is_not_mounted_and_a_secret_workspace_is_refused(tmp_path):
    ssh = tmp_path / ".ssh"
    _write(ssh / "tool.py", "X = 1\n")
    _write(tmp_path / "pkg" / "id_rsa" / "__init__.py", "X = 1\n")
    plan = MountPlan.build(str(tmp_path / "ws"), code=[str(ssh / "tool.py")])
    assert [m.target for m in plan.mounts] == ["/workspace"]
    plan = MountPlan.build(str(tmp_path / "ws"), code=[str(tmp_path / "pkg" / "id_rsa")])
    assert [m.target for m in plan.mounts] == ["/workspace"]
    with pytest.raises(SecretScanError, match="secret location"):
        MountPlan.build(str(ssh))
    with pytest.raises(SecretScanError, match="secret location"):
        DockerSandbox(IMAGE, workspace=ssh / "sub").mount_plan()


def test_find_secrets_lists_what_another_sandbox_must_cover(project):
    workspace = os.path.realpath(project["workspace"])
    found = dict(find_secrets(str(project["workspace"])))
    assert found == {
        f"{workspace}/.env": False,
        f"{workspace}/app/.env.local": False,
        f"{workspace}/home/.ssh": True,
        f"{workspace}/infra/terraform.tfstate": False,
    }


def test_the_pattern_list_covers_the_usual_secrets():
    for name in [
        ".env",
        ".env.local",
        "prod.env",
        "server.pem",
        "tls.key",
        "id_rsa",
        "id_rsa.pub",
        "id_ed25519",
        ".git-credentials",
        ".netrc",
        ".npmrc",
        ".pypirc",
        ".ssh",
        ".aws",
        "repo/.git/config",
        "home/.config/gcloud",
    ]:
        assert secret_match(f"/x/{name}"), name
    for name in ["main.py", "environment.py", "README.md", "keys.py", "config", ".gitignore"]:
        assert secret_match(f"/x/{name}") is None, name


def test_share_code_mounts_imported_packages_not_the_directories_around_them(project):
    sys.path.insert(0, str(project["root"]))
    try:
        importlib.import_module("leaky_pkg.tools")
        roots = shared_code_roots()
        assert str(project["package"]) in roots
        assert str(project["root"]) not in roots
        assert all(not root.startswith(os.path.realpath(sys.prefix) + "/") for root in roots)
        sandbox = DockerSandbox(IMAGE, workspace=project["workspace"])
        kwargs = sandbox._create_kwargs(sandbox.limits)
        assert "volumes" not in kwargs
        targets = {m["Target"]: m for m in kwargs["mounts"]}
        assert str(project["root"]) not in targets
        assert targets[str(project["package"] / ".env")]["ReadOnly"] is True
        assert targets[str(project["package"] / ".ssh")]["Type"] == "tmpfs"
        assert os.path.getsize(targets["/workspace/.env"]["Source"]) == 0
        assert DockerSandbox(IMAGE, share_code=False).mount_plan().python_path == ()
    finally:
        sys.path.remove(str(project["root"]))
        for name in [m for m in sys.modules if m.split(".")[0] == "leaky_pkg"]:
            del sys.modules[name]


async def test_a_container_reads_no_secret(docker_ready, project):
    sys.path.insert(0, str(project["root"]))
    try:
        importlib.import_module("leaky_pkg.tools")
        package = project["package"]
        reads = " ".join(f"'{package / name}'" for name in PACKAGE_SECRETS)
        reads += " " + " ".join(f"'/workspace/{name}'" for name in WORKSPACE_SECRETS)
        links = f"'{package}/innocent.txt' '{package}/looks_fine' '{package}/project_env'"
        command = (
            f"cat {reads} {links} '{project['root']}/.env' '{package}/data/.env' 2>/dev/null; "
            f"cat '{package}/__init__.py' /workspace/notes.md; "
            f"echo x > /workspace/.env 2>/dev/null || echo cannot-write-env"
        )
        async with DockerSandbox(
            IMAGE, SandboxLimits(timeout=30), workspace=project["workspace"]
        ) as sandbox:
            result = await BashTool(runner=sandbox).call({"command": command})
    finally:
        sys.path.remove(str(project["root"]))
        for name in [m for m in sys.modules if m.split(".")[0] == "leaky_pkg"]:
            del sys.modules[name]
    out = str(result.output)
    assert CANARY not in out and CANARY not in (result.error or "")
    assert "VALUE = 42" in out and "work" in out  # the code and the workspace are there
    assert "cannot-write-env" in out
    assert (project["workspace"] / ".env").read_text() == CANARY

"""What isolation a LocalSandbox can give on this machine, and the statement of what holds.

`IsolationPlan` decides, once per sandbox, which steps the worker is asked to apply (from who we
are and what the kernel offers); `IsolationReport` turns what the worker actually applied into the
plain statement the sandbox logs and returns from `LocalSandbox.isolation`.
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import site
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from jianmu_bt.sandbox.isolation import SHARED_TMP_DIRS, can_read
from jianmu_bt.sandbox.secret_files import (
    MAX_SCANNED_ENTRIES,
    SECRET_PATTERNS,
    SecretScanError,
    find_secrets,
    scan,
    secret_match,
    secret_within,
    secrets_under,
)

__all__ = [  # the secret-file names are re-exported: `plan.SECRET_PATTERNS` and the like
    "MAX_SCANNED_ENTRIES",
    "SECRET_PATTERNS",
    "ContainerMount",
    "IsolationPlan",
    "IsolationReport",
    "MountPlan",
    "SecretScanError",
    "find_secrets",
    "import_roots",
    "secret_match",
    "secret_within",
    "secrets_under",
    "shared_code_roots",
]


def _resolve_user(user: str | int | None) -> tuple[int, int, str] | None:
    """(uid, gid, name) of the sandbox user; None keeps the current user."""
    if user is None:
        return None
    if user == "auto":
        if os.geteuid() != 0:
            return None
        user = "nobody"
    entry = pwd.getpwuid(user) if isinstance(user, int) else pwd.getpwnam(user)
    if entry.pw_uid == 0:
        return None
    if os.geteuid() != 0 and entry.pw_uid != os.geteuid():
        raise ValueError(f"LocalSandbox(user={user!r}) needs root to switch to another user")
    return entry.pw_uid, entry.pw_gid, entry.pw_name


def import_roots(readable: Callable[[str], bool] | None = None) -> list[str]:
    """Paths the worker must reach to import what this process imports.

    The import path, the interpreter's prefixes, and every loaded module that lives outside them
    (editable installs, the `__main__` script). `readable` filters out import directories the
    sandbox user could not read even when bound in. Shared temp directories (and "/") are never kept
    whole, since that would undo their privacy: modules loaded from them are kept one by one.
    """
    shared = {*SHARED_TMP_DIRS, "/"}
    roots = {os.path.realpath(p) for p in sys.path if p and os.path.isabs(p) and os.path.exists(p)}
    roots.update(os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix))
    roots.add(os.path.dirname(os.path.realpath(sys.executable)))
    roots -= shared
    if readable is not None:  # a directory the sandbox user cannot read: keep its modules only
        roots = {root for root in roots if readable(root)}
    return sorted(roots | loaded_code_tops(roots))


def loaded_code_tops(outside: Iterable[str]) -> set[str]:
    """The top package directory (or top-level module file) of every loaded module that does not
    live under one of the directories `outside`."""
    prefixes = tuple(root.rstrip("/") + "/" for root in outside)
    tops: set[str] = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        name = getattr(module, "__name__", None) or ""
        if not path or not os.path.isabs(path) or not name:
            continue
        path = os.path.realpath(path)
        if path.startswith(prefixes):
            continue
        # The top package's directory, or the file of a top-level module.
        depth = name.count(".") + (os.path.basename(path) == "__init__.py")
        top = path
        for _ in range(depth):
            top = os.path.dirname(top)
        tops.add(top)
    return tops


@dataclass
class IsolationPlan:
    """The steps a LocalSandbox asks of its workers on this machine."""

    as_root: bool
    user: tuple[int, int, str] | None
    network: bool
    private_mounts: bool

    @classmethod
    def for_machine(cls, user: str | int | None, network: bool) -> IsolationPlan:
        """Decide from our privileges: root can drop to a user and build a mount namespace."""
        as_root = os.geteuid() == 0
        resolved = _resolve_user(user)
        return cls(as_root, resolved, network, as_root and resolved is not None)

    def mount_config(
        self, workspace: str, tmp_size: str, patterns: Iterable[str] = SECRET_PATTERNS
    ) -> dict[str, Any] | None:
        """The worker's private-mount step (None without one): the paths to bind back (the
        workspace and the code to import), the size of the private temp directories, and where
        to cover secret files: the code directories, but neither the workspace nor the Python
        installation (its prefixes and library directories, which are never entered)."""
        if not self.private_mounts or self.user is None:
            return None
        uid, gid = self.user[0], self.user[1]
        code = import_roots(lambda path: can_read(path, uid, {gid}))
        skip = {*installation_dirs(), workspace}
        roots = [root for root in code if root not in skip and not _within(root, _LIBRARIES)]
        secrets = {"roots": roots, "skip": sorted(skip), "patterns": list(patterns)}
        return {"keep": [workspace, *code], "tmp_size": tmp_size, "secrets": secrets}


_LIBRARIES = ("stdlib", "platstdlib", "purelib", "platlib")


def installation_dirs() -> set[str]:
    """The Python installation: its prefixes, the interpreter's directory, its library and site
    directories (real paths, "/" left out)."""
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    found.add(os.path.dirname(os.path.realpath(sys.executable)))
    found.update(sysconfig.get_path(name) for name in _LIBRARIES)
    found.update(site.getsitepackages())
    return {os.path.realpath(path) for path in found if path} - {"/"}


def _within(path: str, names: Iterable[str]) -> bool:
    """Whether `path` lies in one of the interpreter's library directories `names`."""
    for name in names:
        library = os.path.realpath(sysconfig.get_path(name))
        if path == library or path.startswith(library + "/"):
            return True
    return False


@dataclass(frozen=True)
class IsolationReport:
    """A plain statement of what a LocalSandbox isolates on this machine, and what it does not."""

    user: str
    filesystem: str
    network: str
    processes: str
    memory: str
    secrets: str
    warnings: tuple[str, ...] = field(default=())

    def describe(self) -> str:
        """One line per aspect, then the warnings."""
        lines = [
            f"user: {self.user}",
            f"filesystem: {self.filesystem}",
            f"network: {self.network}",
            f"processes: {self.processes}",
            f"memory: {self.memory}",
            f"secrets: {self.secrets}",
        ]
        return "\n".join(lines + [f"NOT ISOLATED: {w}" for w in self.warnings])

    @classmethod
    def build(
        cls, plan: IsolationPlan, applied: dict[str, Any], cgroup_reason: str | None
    ) -> IsolationReport:
        """The report for what a worker said it applied."""
        warnings: list[str] = []
        uid = applied.get("user")
        if isinstance(uid, int) and plan.user:
            user = f"{plan.user[2]} (uid {uid}), without privileges (no_new_privs)"
        else:
            user = f"the current user (uid {os.geteuid()})"
        hidden = applied.get("mount")
        if isinstance(uid, int) and isinstance(hidden, list):
            covered = [d for d in hidden if d not in SHARED_TMP_DIRS]
            filesystem = (
                "the workspace is the only writable place the host shares; /tmp, /var/tmp and "
                "/dev/shm are private; "
                + (
                    f"{', '.join(covered)} covered (only the code to import is bound back); "
                    if covered
                    else ""
                )
                + f"secret files in the code directories covered ({applied.get('secrets', 0)}); "
                + "other files are readable as far as their permissions let any user read them"
            )
        else:
            filesystem = "confined to the workspace only by convention"
            warnings.append(
                "files: the code runs as the current user and can read and change anything that "
                "user can (LocalSandbox needs root to switch user and mount privately; use "
                "DockerSandbox for a file system boundary)"
            )
        if applied.get("network") == "isolated":
            network = "none: a new network namespace without interfaces (no loopback either)"
        else:
            network = "shared with the host (pass network=False to cut it off)"
        if applied.get("cgroup") is True:
            processes = "bounded by a private pids cgroup; all of them are killed after each call"
            memory = "RLIMIT_AS per process, and the cgroup bounds the total"
        else:
            processes = "RLIMIT_NPROC (counts every process of the sandbox user); killed by session"
            memory = "RLIMIT_AS per process only (several processes can use more in total)"
            reason = applied.get("cgroup") if isinstance(applied.get("cgroup"), str) else None
            warnings.append(
                "processes: no private cgroup ("
                + (cgroup_reason or reason or "not available")
                + "); a process that leaves the session escapes the clean-up"
            )
            if not isinstance(uid, int) and os.geteuid() == 0:
                warnings.append("processes: RLIMIT_NPROC does not bind root: no process limit")
        secrets = "only allow-listed environment variables are passed"
        if applied.get("proc") == "hidepid":
            secrets += "; /proc shows only the sandbox user's own processes"
        elif isinstance(uid, int):
            secrets += "; other users' /proc/<pid>/environ is unreadable to the sandbox user"
        else:
            warnings.append(
                "secrets: the code can read the files and /proc entries of the current user"
            )
        return cls(user, filesystem, network, processes, memory, secrets, tuple(warnings))


# -- what a container may see of the host ------------------------------------------------------


@dataclass(frozen=True)
class ContainerMount:
    """One mount of a container: a host path (or an empty tmpfs when `source` is None)."""

    target: str
    source: str | None
    read_only: bool = True

    def to_docker(self) -> dict[str, Any]:
        """The Docker Engine API form (a HostConfig `Mounts` item)."""
        if self.source is None:
            options = {"SizeBytes": 4096, "Mode": 0o555}
            return {
                "Target": self.target,
                "Type": "tmpfs",
                "ReadOnly": True,
                "TmpfsOptions": options,
            }
        return {
            "Target": self.target,
            "Source": self.source,
            "Type": "bind",
            "ReadOnly": self.read_only,
        }


@dataclass(frozen=True)
class MountPlan:
    """What a container sees of the host: the code it shares (read-only, at the same paths), the
    workspace (writable), and an empty read-only cover over every secret inside them."""

    mounts: tuple[ContainerMount, ...]
    python_path: tuple[str, ...]
    hidden: tuple[str, ...]

    @classmethod
    def build(
        cls,
        workspace: str,
        *,
        target: str = "/workspace",
        code: Iterable[str] | None = None,
        patterns: Iterable[str] = SECRET_PATTERNS,
    ) -> MountPlan:
        """Plan the mounts for `workspace` (mounted at `target`) and `code` (host paths, shared
        read-only; default none). Raises SecretScanError for a secret workspace or too much to
        check. A code root that is itself secret is left out."""
        patterns = tuple(patterns)
        workspace = os.path.realpath(workspace)
        if patterns and secret_within(workspace, patterns):
            found = secret_within(workspace, patterns)
            raise SecretScanError(f"the workspace {workspace} is a secret location ({found!r})")
        roots: list[str] = []
        for root in sorted({os.path.realpath(p) for p in code or ()}):
            if not os.path.exists(root) or (patterns and secret_within(root, patterns)):
                continue
            if not any(root.startswith(kept.rstrip("/") + "/") for kept in roots):
                roots.append(root)
        places = [(root, root) for root in roots] + [(workspace, target)]
        mounts = [ContainerMount(root, root) for root in roots]
        mounts.append(ContainerMount(target, workspace, read_only=False))
        covers: dict[str, bool] = {}
        budget = [MAX_SCANNED_ENTRIES]
        for host, _ in places:
            if not patterns or not os.path.isdir(host):
                continue
            secrets, links = scan(host, patterns, budget)
            covers.update(secrets)
            for link in links:  # a link to a secret inside a mount: cover where it leads
                real = os.path.realpath(link)
                if secret_match(link, patterns) or secret_match(real, patterns):
                    covers.setdefault(real, os.path.isdir(real))
        sources = {host for host, _ in places}
        hidden: list[str] = []
        covered_dirs: list[str] = []
        for host, is_dir in sorted(covers.items()):
            if host in sources or not os.path.lexists(host):
                continue
            if any(host.startswith(d + "/") for d in covered_dirs):
                continue  # already inside an empty cover
            if is_dir:
                covered_dirs.append(host)
            for inside in _container_paths(host, places):  # outside every mount: absent anyway
                mounts.append(ContainerMount(inside, None if is_dir else empty_file()))
                hidden.append(inside)
        return cls(tuple(mounts), _python_path(roots), tuple(hidden))


def empty_file() -> str:
    """A private, empty, read-only regular file (one per process) that covers secret files: a
    write to a covered file fails (read-only mount) instead of vanishing as into /dev/null."""
    if not _EMPTY or not os.path.isfile(_EMPTY[0]) or os.path.getsize(_EMPTY[0]):
        directory = tempfile.mkdtemp(prefix="jianmu-cover-")
        path = os.path.join(directory, "empty")
        with open(path, "x"):
            pass
        os.chmod(path, 0o444)
        atexit.register(shutil.rmtree, directory, True)
        _EMPTY[:] = [path]
    return _EMPTY[0]


_EMPTY: list[str] = []


def _container_paths(host: str, places: list[tuple[str, str]]) -> list[str]:
    """Where the host path `host` appears in the container (once per mount that holds it)."""
    found = []
    for source, target in places:
        if host.startswith(source.rstrip("/") + "/"):
            found.append(target.rstrip("/") + host[len(source.rstrip("/")) :])
    return found


def _python_path(roots: list[str]) -> tuple[str, ...]:
    """The import path entries that reach `roots` (their parents), in this process's order."""
    parents = {os.path.dirname(root) for root in roots}
    entries = [os.path.realpath(p) for p in sys.path if p and os.path.isabs(p)]
    ordered = [entry for entry in entries if entry in parents]
    return tuple(dict.fromkeys([*ordered, *sorted(parents)]))


def shared_code_roots() -> list[str]:
    """What DockerSandbox(share_code=True) mounts: the top package directory (or module file) of
    every loaded module from outside the Python installation (which the image brings itself)."""
    installation = {
        os.path.realpath(p)
        for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)
    }
    shared = {*SHARED_TMP_DIRS, "/"}
    return sorted(top for top in loaded_code_tops(installation) if top not in shared)

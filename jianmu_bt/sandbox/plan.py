"""What isolation a LocalSandbox can give on this machine, and the statement of what holds.

`IsolationPlan` decides, once per sandbox, which steps the worker is asked to apply (from who we
are and what the kernel offers); `IsolationReport` turns what the worker actually applied into the
plain statement the sandbox logs and returns from `LocalSandbox.isolation`.
"""

from __future__ import annotations

import os
import pwd
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jianmu_bt.sandbox.isolation import SHARED_TMP_DIRS


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
    prefixes = tuple(root.rstrip("/") + "/" for root in roots)
    extra: set[str] = set()
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
        extra.add(top)
    return sorted(roots | extra)


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

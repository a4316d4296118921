"""Isolation steps a sandbox worker applies to itself before it runs anything untrusted.

Run in the child, in this order: join the cgroup, leave the network (a new network namespace),
build a private mount namespace (private /tmp, /var/tmp and /dev/shm; directories the sandbox user
cannot enter are hidden behind empty ones, with only the Python installation and the workspace
bound back; secret files in the code directories covered; /proc shows only the sandbox user's
own processes), set rlimits, drop to the sandbox user, forbid regaining privileges. Each step
reports what it did, or why it could not, so the sandbox can state exactly what holds here.

The worker then makes itself non-dumpable (`forbid_tracing`): code running as the same user (the
calls' own processes) can then neither trace it, nor read its memory, nor open `/proc/<pid>/fd`,
nor take its descriptors with `pidfd_getfd`. A process forked for one call closes every
descriptor but its own (`close_fds_except`), dies with its parent and tightens the call's rlimits.
`placement` decides which calls get such a process (the untrusted ones, by default).

The namespace steps need root (CAP_SYS_ADMIN); a non-root user gets a network namespace through an
unprivileged user namespace where the kernel allows it, and no file system confinement.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import resource
import signal
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from jianmu_bt.sandbox.secret_files import secrets_under

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38

#: Which calls run in a fresh process of their own: the untrusted ones, all, or none.
ISOLATE_POLICIES = ("untrusted", "all", "none")
#: World-writable places every user shares; the sandbox gets empty private ones instead.
SHARED_TMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int) -> None:
    """unshare(2) (Python 3.11 has no os.unshare)."""
    _check(_libc.unshare(flags), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    """mount(2)."""
    enc = [None if v is None else v.encode() for v in (source, target, fstype, data or None)]
    _check(_libc.mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), enc[3]), f"mount {target}")


def prctl(option: int, value: int) -> None:
    """prctl(2) with one argument."""
    _check(_libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0), "prctl")


def can_enter(path: str, uid: int, gids: set[int]) -> bool:
    """Whether `uid` may traverse into `path` (search permission on it and every parent)."""
    current = Path("/")
    for part in Path(path).parts[1:]:
        current = current / part
        if not _searchable(current, uid, gids):
            return False
    return True


def _searchable(path: Path, uid: int, gids: set[int]) -> bool:
    try:
        st = path.stat()
    except OSError:
        return True  # a missing path blocks nothing; the caller deals with it
    if not stat.S_ISDIR(st.st_mode):
        return True
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IXUSR)
    if st.st_gid in gids:
        return bool(st.st_mode & stat.S_IXGRP)
    return bool(st.st_mode & stat.S_IXOTH)


def can_read(path: str, uid: int, gids: set[int]) -> bool:
    """Whether `uid` may read `path` itself (list and enter a directory, read a file)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    need = (stat.S_IRUSR | stat.S_IXUSR) if stat.S_ISDIR(st.st_mode) else stat.S_IRUSR
    if st.st_uid != uid:
        need >>= 3 if st.st_gid in gids else 6
    return st.st_mode & need == need


def _first_blocked(path: str, uid: int, gids: set[int]) -> str | None:
    current = Path("/")
    for part in Path(path).parts[1:]:
        current = current / part
        if not _searchable(current, uid, gids):
            return str(current)
    return None


def _covered(path: str, roots: Iterable[str]) -> str | None:
    for root in roots:
        if path == root or path.startswith(root.rstrip("/") + "/"):
            return root
    return None


def private_mounts(keep: list[str], uid: int, gid: int, tmp_size: str) -> list[str]:
    """A private mount namespace for the sandbox user; returns the directories it hid.

    `keep` are paths the sandbox user must reach (the workspace, the Python installation, the
    code to import). Shared temp directories and every directory that blocks the user from a kept
    path are covered with an empty tmpfs; the kept paths are then bound back in place.
    """
    unshare(CLONE_NEWNS)
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing we do here reaches the host
    keep = sorted({os.path.realpath(p) for p in keep if os.path.exists(p)}, key=len)
    hide = [d for d in SHARED_TMP_DIRS if os.path.isdir(d) and not os.path.islink(d)]
    for path in keep:
        blocked = _first_blocked(path, uid, {gid})
        if blocked and not _covered(blocked, hide):
            hide.append(blocked)
    hide = [
        d for d in sorted(set(hide), key=len) if _covered(d, [h for h in hide if h != d]) is None
    ]
    handles = {d: os.open(d, os.O_PATH | os.O_DIRECTORY) for d in hide}
    try:
        for directory in hide:
            mode = "1777" if directory in SHARED_TMP_DIRS else "0755"
            size = tmp_size if directory in SHARED_TMP_DIRS else "1m"
            mount("tmpfs", directory, "tmpfs", MS_NOSUID | MS_NODEV, f"mode={mode},size={size}")
        for path in keep:
            root = _covered(path, hide)
            if root is None:
                continue
            relative = os.path.relpath(path, root)
            source = f"/proc/self/fd/{handles[root]}" + ("" if relative == "." else f"/{relative}")
            if os.path.isdir(source):
                os.makedirs(path, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                Path(path).touch()
            # A recursive bind of the hidden directory itself would bring our tmpfs back with it.
            mount(source, path, None, MS_BIND | (MS_REC if relative != "." else 0))
    finally:
        for handle in handles.values():
            os.close(handle)
    return hide


def cover_secrets(roots: list[str], patterns: list[str], skip: list[str]) -> list[str]:
    """Cover every secret file under `roots` (`secret_files.secrets_under`) in this mount
    namespace: a file with /dev/null (it reads as empty, writes go nowhere), a directory with an
    empty read-only tmpfs. Returns what was covered; raises (SecretScanError, OSError) when
    anything could not be, so that a worker never runs with a secret left readable."""
    covered: list[str] = []
    for path, is_dir in sorted(secrets_under(roots, patterns, skip).items()):
        if any(path.startswith(done + "/") for done in covered) or not os.path.lexists(path):
            continue  # inside a covered directory, or outside what this namespace shows
        flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
        if is_dir:
            mount("tmpfs", path, "tmpfs", flags, "mode=0555,size=4k")
        else:
            mount("/dev/null", path, None, MS_BIND)
            mount(None, path, None, MS_REMOUNT | MS_BIND | (flags & ~MS_NODEV))
        covered.append(path)
    return covered


def hide_other_processes() -> None:
    """A fresh /proc that shows the sandbox user only its own processes (hidepid)."""
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible")


def leave_network(as_root: bool) -> None:
    """Enter a new, empty network namespace (not even loopback is up)."""
    if as_root:
        unshare(CLONE_NEWNET)
        return
    uid, gid = os.getuid(), os.getgid()
    unshare(CLONE_NEWUSER | CLONE_NEWNET)
    # Map our own ids so files keep their owners inside the user namespace.
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")


def set_rlimits(limits: dict[str, Any], *, nproc: int | None, warm: bool) -> None:
    """Apply the rlimits of a SandboxLimits dict (hard = soft, so the code cannot raise them).

    In a warm worker the CPU limit is set per call (`set_call_cpu_limit`), so its hard limit stays
    open; the wall-clock timeout remains the hard stop.
    """
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    pairs = {
        resource.RLIMIT_AS: limits.get("memory_bytes"),
        resource.RLIMIT_NOFILE: limits.get("max_open_files"),
        resource.RLIMIT_FSIZE: limits.get("max_file_bytes"),
        resource.RLIMIT_NPROC: nproc,
    }
    for which, value in pairs.items():
        if value:
            resource.setrlimit(which, (int(value), int(value)))
    cpu = limits.get("cpu_seconds")
    if cpu and not warm:
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu), int(cpu) + 1))


def set_call_cpu_limit(cpu_seconds: int | None) -> None:
    """Allow `cpu_seconds` more CPU time from now (RLIMIT_CPU counts the process's whole life)."""
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    if not cpu_seconds:
        soft = hard
    else:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        soft = math.ceil(usage.ru_utime + usage.ru_stime + cpu_seconds)
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def set_call_rlimits(limits: dict[str, Any]) -> None:
    """Tighten a fresh call process's rlimits to the call's own limits (they never loosen).

    CPU time counts from the process's start, so the call gets exactly `cpu_seconds` (then SIGXCPU,
    one second later SIGKILL); memory and file size take the call's values where they are lower.
    """
    pairs = (
        (resource.RLIMIT_AS, limits.get("memory_bytes"), 0),
        (resource.RLIMIT_FSIZE, limits.get("max_file_bytes"), 0),
        (resource.RLIMIT_CPU, limits.get("cpu_seconds"), 1),
    )
    for which, value, grace in pairs:
        if not value:
            continue
        _, hard = resource.getrlimit(which)
        soft = int(value) if hard == resource.RLIM_INFINITY else min(int(value), hard)
        new_hard = soft + grace if hard == resource.RLIM_INFINITY else min(soft + grace, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(which, (soft, new_hard))


def forbid_tracing() -> None:
    """Make this process non-dumpable: processes of the same user cannot ptrace it, read its
    memory, list or open its /proc/<pid>/fd, or copy its descriptors (pidfd_getfd).

    Switching to the sandbox user already does this (fs.suid_dumpable is 0); without a switch of
    user it must be asked for. Children forked afterwards inherit it.
    """
    prctl(PR_SET_DUMPABLE, 0)


def die_with_parent(parent: int) -> None:
    """SIGKILL this process when `parent` dies (the flag is not inherited across fork)."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(0)


def close_fds_except(keep: Iterable[int]) -> None:
    """Close every descriptor above 2 except `keep` (0-2 are /dev/null in a worker)."""
    low = 3
    for fd in sorted({k for k in keep if k >= 3}):
        os.closerange(low, fd)
        low = fd + 1
    finite = [n for n in resource.getrlimit(resource.RLIMIT_NOFILE) if n != resource.RLIM_INFINITY]
    os.closerange(low, min(max(finite, default=1 << 20), 1 << 20))


def drop_privileges(uid: int, gid: int) -> None:
    """Become `uid`/`gid` for good (no supplementary groups), then verify it cannot go back."""
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    try:
        os.setuid(0)
    except PermissionError:
        return
    raise RuntimeError("privileges could not be dropped: setuid(0) still succeeds")


def count_user_tasks(uid: int) -> int:
    """Processes and threads `uid` owns now (what RLIMIT_NPROC counts against)."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if entry.stat().st_uid != uid:
                continue
            with open(f"/proc/{entry.name}/status") as handle:
                for line in handle:
                    if line.startswith("Threads:"):
                        total += int(line.split()[1])
                        break
    return total


def apply_config(config: dict[str, Any]) -> dict[str, Any]:
    """Apply the isolation steps a worker's configuration asks for, in order; returns what
    was applied (or why not). Run once, in the worker, before anything untrusted."""
    applied: dict[str, Any] = {}
    as_root = os.geteuid() == 0
    for procs in config.get("cgroup_procs") or []:
        try:
            with open(procs, "w") as handle:
                handle.write(str(os.getpid()))
            applied["cgroup"] = True
        except OSError as exc:
            applied["cgroup"] = f"could not join the cgroup: {exc}"
    if config.get("network") is False:
        leave_network(as_root)  # failure is fatal: no-network was asked for
        applied["network"] = "isolated"
    user = config.get("user")
    mount_cfg = config.get("mount")
    if mount_cfg:
        try:
            uid, gid = (user["uid"], user["gid"]) if user else (os.getuid(), os.getgid())
            hidden = private_mounts(mount_cfg["keep"], uid, gid, mount_cfg["tmp_size"])
            applied["mount"] = hidden
            try:
                hide_other_processes()
                applied["proc"] = "hidepid"
            except OSError as exc:
                applied["proc"] = f"could not remount /proc: {exc}"
        except OSError as exc:
            applied["mount"] = f"could not build a private mount namespace: {exc}"
        if isinstance(applied.get("mount"), list) and mount_cfg.get("secrets"):
            applied["secrets"] = len(cover_secrets(**mount_cfg["secrets"]))
    set_rlimits(config.get("limits", {}), nproc=config.get("nproc"), warm=config["warm"])
    if user:
        keep = (mount_cfg or {}).get("keep", [])
        reachable = all(can_enter(p, user["uid"], {user["gid"]}) for p in keep)
        if isinstance(applied.get("mount"), list) or reachable:
            drop_privileges(user["uid"], user["gid"])
            applied["user"] = user["uid"]
        else:
            applied["user"] = "kept: the sandbox user could not reach the Python installation"
    with contextlib.suppress(OSError):
        prctl(PR_SET_NO_NEW_PRIVS, 1)
    if config.get("parent_pid"):
        die_with_parent(config["parent_pid"])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an over-size write fails with EFBIG instead
    os.chdir(config["workspace"])
    return applied


def is_untrusted(tool: Any) -> bool:
    """Whether `tool` runs code it is given: `sandbox_untrusted`, else an "exec" effect tag."""
    marked = getattr(tool, "sandbox_untrusted", None)
    if marked is not None:
        return bool(marked)
    return "exec" in (getattr(tool, "effect_tags", None) or ())


def placement(tool: Any, policy: str) -> tuple[bool, str | None]:
    """Where a call of `tool` runs under `policy` (ISOLATE_POLICIES): (in a process of its own,
    the session key that process is kept for)."""
    isolate = policy == "all" or (policy == "untrusted" and is_untrusted(tool))
    session = getattr(tool, "sandbox_session", None) if isolate else None
    return isolate, session if isinstance(session, str) else None


def sweep_namespace(keep: set[int], parents: set[int]) -> None:
    """Kill every process in this pid namespace but `keep` and the children of `parents`: in a
    container nothing a call started may wait for the next call (to read its request from, or
    write a reply to, the pipes the container's init holds)."""
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) not in keep:
            with contextlib.suppress(OSError, ValueError, IndexError):
                with open(f"/proc/{entry.name}/stat", "rb") as handle:
                    stat = handle.read()
                if int(stat[stat.rindex(b")") + 2 :].split()[1]) not in parents:
                    os.kill(int(entry.name), signal.SIGKILL)

"""A private cgroup per sandboxed worker: the bound that holds for a fork bomb even as root.

RLIMIT_NPROC counts processes per user and does not bind root at all; a pids cgroup counts the
tasks of one group of processes whatever their user, and a memory cgroup bounds their total
memory. The worker joins the group itself before it runs anything untrusted (the paths to join
are in its start-up configuration). Both cgroup v1 (one hierarchy per controller) and v2 (one
unified hierarchy, when the controllers are delegated to us) are handled; where neither can be
created, `CgroupSet.create` says why and the sandbox falls back to rlimits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

_ROOT = Path("/sys/fs/cgroup")


def _own_cgroups() -> dict[str, str]:
    """controller -> this process's cgroup path ("" key for the v2 unified hierarchy)."""
    result: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            result[name] = path
    return result


def _mounts() -> dict[str, tuple[str, str]]:
    """controller -> (mount point, mount root); "" for a cgroup2 mount."""
    found: dict[str, tuple[str, str]] = {}
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(rfields) < 3:
            continue
        root, mount_point, fstype = fields[3], fields[4], rfields[0]
        if fstype == "cgroup2":
            found.setdefault("", (mount_point, root))
        elif fstype == "cgroup":
            for option in rfields[2].split(","):
                if option in ("pids", "memory"):
                    found.setdefault(option, (mount_point, root))
    return found


def _read_counter(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value.strip())
    except (OSError, ValueError):
        pass
    return 0


def _read_int(path: Path) -> int:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return 0


@dataclass
class CgroupSet:
    """The cgroup directories of one worker, with its limits written in.

    `procs_files` are the `cgroup.procs` files the worker writes its pid into; `hits()` returns
    how often each limit was reached so far, so a caller can tell which limit ended a call.
    """

    pids_dir: Path | None
    memory_dir: Path | None
    version: int
    procs_files: list[str] = field(default_factory=list)

    @classmethod
    def create(
        cls, pids_max: int | None, memory_max: int | None, tag: str = ""
    ) -> tuple[CgroupSet | None, str]:
        """A new cgroup with these limits, or (None, the reason it cannot be made here).

        Its name is `jianmu-sandbox-<tag>-<random>`, so a sandbox's groups can be found by tag.
        """
        if not _ROOT.exists():
            return None, "no cgroup file system is mounted at /sys/fs/cgroup"
        name = f"jianmu-sandbox-{tag + '-' if tag else ''}{uuid.uuid4().hex[:12]}"
        try:
            own, mounts = _own_cgroups(), _mounts()
        except OSError as exc:
            return None, f"cannot read this process's cgroups: {exc}"
        try:
            if "pids" in mounts:
                return cls._create_v1(name, own, mounts, pids_max, memory_max)
            if "" in mounts:
                return cls._create_v2(name, own, mounts[""], pids_max, memory_max)
        except OSError as exc:
            return None, f"cannot create a cgroup ({exc.strerror or exc}: {exc.filename})"
        return None, "no pids cgroup controller is available"

    @staticmethod
    def _dir(mount: tuple[str, str], own_path: str, name: str) -> Path:
        mount_point, root = mount
        relative = os.path.relpath(own_path, root) if own_path.startswith(root) else "."
        return Path(mount_point, relative, name).resolve()

    @classmethod
    def _create_v1(
        cls,
        name: str,
        own: dict[str, str],
        mounts: dict[str, tuple[str, str]],
        pids_max: int | None,
        memory_max: int | None,
    ) -> tuple[CgroupSet, str]:
        pids_dir = cls._dir(mounts["pids"], own.get("pids", "/"), name)
        pids_dir.mkdir()
        (pids_dir / "pids.max").write_text(str(pids_max) if pids_max else "max")
        memory_dir = None
        if memory_max and "memory" in mounts:
            try:
                memory_dir = cls._dir(mounts["memory"], own.get("memory", "/"), name)
                memory_dir.mkdir()
                (memory_dir / "memory.limit_in_bytes").write_text(str(memory_max))
                swap = memory_dir / "memory.memsw.limit_in_bytes"
                if swap.exists():
                    swap.write_text(str(memory_max))
            except OSError:
                memory_dir = None  # pids alone still bounds a fork bomb
        files = [str(d / "cgroup.procs") for d in (pids_dir, memory_dir) if d]
        return cls(pids_dir, memory_dir, 1, files), ""

    @classmethod
    def _create_v2(
        cls,
        name: str,
        own: dict[str, str],
        mount: tuple[str, str],
        pids_max: int | None,
        memory_max: int | None,
    ) -> tuple[CgroupSet | None, str]:
        parent = cls._dir(mount, own.get("", "/"), "")
        enabled = (parent / "cgroup.subtree_control").read_text().split()
        if "pids" not in enabled:
            try:
                (parent / "cgroup.subtree_control").write_text("+pids +memory")
            except OSError as exc:
                return None, f"the pids controller is not delegated to {parent} ({exc.strerror})"
            enabled = (parent / "cgroup.subtree_control").read_text().split()
        directory = parent / name
        directory.mkdir()
        (directory / "pids.max").write_text(str(pids_max) if pids_max else "max")
        has_memory = bool(memory_max) and "memory" in enabled
        if has_memory:
            (directory / "memory.max").write_text(str(memory_max))
            with contextlib.suppress(OSError):
                (directory / "memory.swap.max").write_text("0")
        memory_dir = directory if has_memory else None
        return cls(directory, memory_dir, 2, [str(directory / "cgroup.procs")]), ""

    # -- observation ------------------------------------------------------------------------

    def hits(self) -> dict[str, int]:
        """How often each limit was reached: {"processes": n, "memory": n} (counters only grow)."""
        result = {"processes": 0, "memory": 0}
        if self.pids_dir is not None:
            result["processes"] = _read_counter(self.pids_dir / "pids.events", "max")
        if self.memory_dir is not None:
            if self.version == 2:
                result["memory"] = _read_counter(self.memory_dir / "memory.events", "oom_kill")
            else:
                kills = _read_counter(self.memory_dir / "memory.oom_control", "oom_kill")
                result["memory"] = kills or _read_int(self.memory_dir / "memory.failcnt")
        return result

    def pids(self) -> set[int]:
        """Every process now in the group."""
        found: set[int] = set()
        for procs in self.procs_files:
            with contextlib.suppress(OSError, ValueError):
                found.update(int(p) for p in Path(procs).read_text().split())
        return found

    def task_count(self) -> int:
        """Processes and threads now in the group (cheap: one small file)."""
        if self.pids_dir is None:
            return 0
        return _read_int(self.pids_dir / "pids.current")

    # -- teardown ---------------------------------------------------------------------------

    def kill_all(self, exclude: int | None = None, deadline: float = 3.0) -> None:
        """SIGKILL every process in the group (except `exclude`) until none is left."""
        if self.version == 2 and exclude is None and self.pids_dir is not None:
            with contextlib.suppress(OSError):
                (self.pids_dir / "cgroup.kill").write_text("1")
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            targets = self.pids() - {exclude}
            if not targets:
                return
            for pid in targets:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.001)

    def remove(self) -> None:
        """Kill what is left and remove the directories (retrying while exits finish)."""
        self.kill_all()
        for directory in {d for d in (self.pids_dir, self.memory_dir) if d is not None}:
            for _ in range(200):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.005)


def own_cgroup_hits(root: Path = _ROOT) -> dict[str, int]:
    """Limit counters of the cgroup this process sees as its own (inside a container)."""
    pids = next((p for p in (root / "pids/pids.events", root / "pids.events") if p.exists()), None)
    result = {"processes": _read_counter(pids, "max") if pids else 0}
    memory_v1 = root / "memory/memory.oom_control"
    if memory_v1.exists():
        result["memory"] = _read_counter(memory_v1, "oom_kill")
    elif (root / "memory.events").exists():
        result["memory"] = _read_counter(root / "memory.events", "oom_kill")
    return result

"""WorkerProcess: the parent's handle on one LocalSandbox worker process.

The channel (`channel.LineChannel`) is a Unix socket pair on the child's stdin/stdout, read without
blocking through the event loop, so a worker is not tied to the event loop that started it.
Killing is total: the process group, then everything left in the worker's cgroup (or, without
one, in its session), then the worker is reaped and its cgroup removed. The procedure is written
once, as steps that say how long to pause before looking again (`_kill_steps`): `akill` and
`asweep` pause with `anyio.sleep`, so the event loop never stalls, and shield themselves from
cancellation; `kill` pauses with `time.sleep`, for a finaliser, where no event loop runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import anyio
import anyio.to_thread

from jianmu_bt.sandbox.cgroups import CgroupSet
from jianmu_bt.sandbox.channel import LineChannel

_KILL_DEADLINE = 3.0  # seconds to keep killing (processes can be forked while we kill)


def _stat_fields(pid: int | str) -> list[bytes]:
    """The fields of /proc/<pid>/stat after the command name: state ppid pgrp session ..."""
    with open(f"/proc/{pid}/stat", "rb") as handle:
        data = handle.read()
    return data[data.rindex(b")") + 2 :].split()


def _scan(pids: Iterable[int | str], session: int | None = None) -> dict[int, int]:
    """{pid: parent pid} of those `pids` that still run (not exited), in `session` if given."""
    found: dict[int, int] = {}
    for pid in pids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = _stat_fields(pid)
            if fields[0] != b"Z" and (session is None or int(fields[3]) == session):
                found[int(pid)] = int(fields[1])
    return found


def session_pids(sid: int) -> set[int]:
    """Running processes whose session id is `sid` (the fallback when there is no cgroup)."""
    entries = (entry.name for entry in os.scandir("/proc") if entry.name.isdigit())
    return set(_scan(entries, sid))


def _pauses(first: float = 0.0005, longest: float = 0.02) -> Iterator[float]:
    """Growing pauses between looks at processes that are on their way out."""
    pause = first
    while True:
        yield pause
        pause = min(pause * 2, longest)


class WorkerProcess(LineChannel):
    """A started worker: send requests, read replies, kill it and everything it started."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        config: dict[str, Any],
        cgroup: CgroupSet | None,
    ) -> None:
        super().__init__()
        parent_sock, child_sock = socket.socketpair()
        try:
            self.proc = subprocess.Popen(
                list(argv),
                stdin=child_sock.fileno(),
                stdout=child_sock.fileno(),
                stderr=subprocess.PIPE,
                env=dict(env),
                cwd="/",
                start_new_session=True,  # its own session and process group
                close_fds=True,
            )
        except BaseException:
            parent_sock.close()
            if cgroup is not None:
                cgroup.remove()
            raise
        finally:
            child_sock.close()
        parent_sock.setblocking(False)
        self._sock = parent_sock
        self.pid = self.proc.pid
        self.cgroup = cgroup
        self.config = config
        self.ready: dict[str, Any] = {}
        self._killed = False
        self.cpu_used = 0.0
        self._final_hits: dict[str, int] | None = None
        self.queue(config)  # sent by `start`

    async def start(self) -> dict[str, Any]:
        """Send the configuration and wait for the ready line; raises RuntimeError on failure."""
        ready = await self.read_ready()
        if not ready.get("ready"):
            stderr = await self._stderr_tail()
            await self.akill()
            reason = ready.get("error") or stderr or f"exit status {self.proc.returncode}"
            raise RuntimeError(f"the sandbox worker failed to start: {reason}")
        if self.proc.stderr is not None:
            self.proc.stderr.close()  # the worker has pointed its stderr at /dev/null
        self.ready = ready
        return ready

    async def _stderr_tail(self) -> str:
        if self.proc.stderr is None:
            return ""

        def read() -> bytes:
            assert self.proc.stderr is not None
            return self.proc.stderr.read(1 << 16)

        with anyio.move_on_after(5):
            data = await anyio.to_thread.run_sync(read, abandon_on_cancel=True)
            return data.decode(errors="replace").strip()[-2000:]
        return ""

    # -- processes --------------------------------------------------------------------------

    def hits(self) -> dict[str, int]:
        """How often the cgroup saw each limit reached (kept after the worker is killed)."""
        if self.cgroup is None:
            return {}
        return self._final_hits if self._final_hits is not None else self.cgroup.hits()

    def _members(self) -> dict[int, int]:
        """{pid: parent pid} of the worker's running processes: its cgroup, else its session."""
        if self.cgroup is not None:
            return _scan(self.cgroup.pids())
        entries = (entry.name for entry in os.scandir("/proc") if entry.name.isdigit())
        return _scan(entries, self.pid)

    def extra_processes(self, keep: Iterable[int] = ()) -> set[int]:
        """Processes the calls left running: all but the worker, `keep` and `keep`'s children
        (the worker's helpers: its fork server, with the spare and session processes)."""
        if self.cgroup is not None and self.cgroup.task_count() <= 1:
            return set()
        return self._targets({self.pid}, set(keep))

    def _targets(self, spared: set[int], parents: set[int] | frozenset[int]) -> set[int]:
        members = self._members()
        return {
            pid
            for pid, ppid in members.items()
            if pid not in spared and pid not in parents and ppid not in parents
        }

    def _terminate(
        self, spared: set[int], parents: set[int] | frozenset[int] = frozenset()
    ) -> Iterator[float]:
        """SIGKILL every process of the worker but `spared`, `parents` and their children,
        until none is left (bounded)."""
        end = time.monotonic() + _KILL_DEADLINE
        pauses = _pauses()
        while (targets := self._targets(spared, parents)) and time.monotonic() < end:
            for pid in targets:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            yield next(pauses)

    def _kill_steps(self) -> Iterator[float]:
        """The whole kill; yields the seconds to pause before the next look."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        if self.cgroup is not None and self.cgroup.version == 2 and self.cgroup.pids_dir:
            with contextlib.suppress(OSError):
                (self.cgroup.pids_dir / "cgroup.kill").write_text("1")
        yield from self._terminate(set())
        yield from self._reap_steps()
        self._close_socket()
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        if self.cgroup is not None:
            self._final_hits = self.cgroup.hits()
            yield from self._remove_cgroup_steps()

    def _reap_steps(self) -> Iterator[float]:
        # wait4, not Popen.wait: the resource usage tells a CPU-limit kill from other kills.
        end = time.monotonic() + _KILL_DEADLINE
        pauses = _pauses()
        while self.proc.returncode is None:
            try:
                pid, status, usage = os.wait4(self.pid, os.WNOHANG)
            except ChildProcessError:
                return
            if pid:
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                self.cpu_used = usage.ru_utime + usage.ru_stime
                return
            if time.monotonic() > end:
                return
            yield next(pauses)

    def _remove_cgroup_steps(self) -> Iterator[float]:
        assert self.cgroup is not None
        dirs = {d for d in (self.cgroup.pids_dir, self.cgroup.memory_dir) if d is not None}
        for directory in dirs:
            pauses = _pauses(0.001, 0.02)
            end = time.monotonic() + _KILL_DEADLINE
            while True:
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # busy while the last exits finish
                    if time.monotonic() > end:
                        break
                    yield next(pauses)

    def kill(self) -> None:
        """Kill the worker and everything it started; reap it; remove its cgroup. Idempotent.

        Blocks (with `time.sleep`): for finalisers and other places without an event loop.
        """
        if self._killed:
            return
        self._killed = True
        for pause in self._kill_steps():
            time.sleep(pause)

    async def akill(self) -> None:
        """`kill` for the event loop: pauses with anyio sleeps; completes even when cancelled."""
        if self._killed:
            return
        self._killed = True
        with anyio.CancelScope(shield=True):
            for pause in self._kill_steps():
                await anyio.sleep(pause)

    async def asweep(self, keep: Iterable[int] = ()) -> None:
        """Kill whatever the last call left running: all but the worker, `keep` and the
        children of `keep`. Nobody chooses its parent, so a call cannot shelter behind these."""
        parents = set(keep)
        if not self.extra_processes(parents):
            return
        with anyio.CancelScope(shield=True):
            for pause in self._terminate({self.pid}, parents):
                await anyio.sleep(pause)

    @property
    def usable(self) -> bool:
        """Whether the worker is still running and may take another call."""
        return not self._killed and self.proc.poll() is None

    def exit_signal(self) -> int | None:
        """The signal that ended the worker, if one did (after it exited)."""
        code = self.proc.poll()
        return -code if code is not None and code < 0 else None

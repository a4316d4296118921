"""WorkerProcess: the parent's handle on one LocalSandbox worker process (and ChildProcess: the
worker's handle on one call process it runs untrusted code in).

The channel is a Unix socket pair on the child's stdin/stdout, read without blocking through the
event loop (`anyio.wait_readable`), so a worker is not tied to the event loop that started it.
Killing is total: the process group, then everything left in the worker's cgroup (or, without
one, in its session), then the worker is reaped and its cgroup removed. The procedure is written
once, as steps that say how long to pause before looking again (`_kill_steps`): `akill` and
`asweep` pause with `anyio.sleep`, so the event loop never stalls, and shield themselves from
cancellation; `kill` pauses with `time.sleep`, for a finaliser, where no event loop runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import anyio

from jianmu_bt.sandbox.cgroups import CgroupSet
from jianmu_bt.sandbox.limits import limit_error, sandbox_error

_READ_CHUNK = 1 << 16
_KILL_DEADLINE = 3.0  # seconds to keep killing (processes can be forked while we kill)


class WorkerGone(Exception):
    """The worker closed its channel (it exited or was killed)."""


class ReplyTooLarge(Exception):
    """A reply line grew past the byte cap before it ended."""


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


class WorkerProcess:
    """A started worker: send requests, read replies, kill it and everything it started."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        config: dict[str, Any],
        cgroup: CgroupSet | None,
    ) -> None:
        parent_sock, child_sock = socket.socketpair()
        try:
            self.proc = subprocess.Popen(
                list(argv),
                stdin=child_sock,
                stdout=child_sock,
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
        self.sock = parent_sock
        self.pid = self.proc.pid
        self.cgroup = cgroup
        self.config = config
        self.ready: dict[str, Any] = {}
        self._buffer = bytearray()
        self._killed = False
        self.cpu_used = 0.0
        self._final_hits: dict[str, int] | None = None
        self._send_line(config)

    # -- channel ----------------------------------------------------------------------------

    def _send_line(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode() + b"\n"
        self._pending = memoryview(data)

    async def _flush(self) -> None:
        while self._pending:
            try:
                sent = self.sock.send(self._pending)
            except BlockingIOError:
                await anyio.wait_writable(self.sock)
                continue
            except OSError as exc:
                raise WorkerGone(str(exc)) from exc
            self._pending = self._pending[sent:]

    async def _read_line(self, cap: int) -> bytes:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                return line
            if len(self._buffer) > cap:
                raise ReplyTooLarge(len(self._buffer))
            try:
                chunk = self.sock.recv(_READ_CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(self.sock)
                continue
            except OSError as exc:
                raise WorkerGone(str(exc)) from exc
            if not chunk:
                raise WorkerGone("the worker closed its channel")
            self._buffer += chunk

    @property
    def stray_bytes(self) -> int:
        """Bytes read past the last reply (a sound worker writes exactly one line per request)."""
        return len(self._buffer)

    async def start(self) -> dict[str, Any]:
        """Send the configuration and wait for the ready line; raises RuntimeError on failure."""
        try:
            await self._flush()
            line = await self._read_line(1 << 20)
            ready = json.loads(line)
        except (WorkerGone, ValueError, ReplyTooLarge):
            ready = {"ready": False}
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

    async def request(self, message: dict[str, Any], cap: int) -> dict[str, Any]:
        """Send one request and return its reply (WorkerGone / ReplyTooLarge on failure)."""
        self._send_line(message)
        await self._flush()
        line = await self._read_line(cap)
        try:
            return json.loads(line)
        except ValueError as exc:
            raise WorkerGone(f"the worker sent an unreadable reply ({exc})") from exc

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
        self.sock.close()
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
    def alive(self) -> bool:
        """Whether the worker is still running and usable."""
        return not self._killed and self.proc.poll() is None

    def exit_signal(self) -> int | None:
        """The signal that ended the worker, if one did (after it exited)."""
        code = self.proc.poll()
        return -code if code is not None and code < 0 else None


def pidfd_open(pid: int) -> int | None:
    """A descriptor that turns readable when `pid` ends (None where the kernel has none)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


class ChildProcess:
    """The worker's handle on one call process: its socket, and a pidfd that says when it ends."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.sock = sock
        self.buffer = bytearray()
        self.pidfd = _pidfd(pid)

    def ask(self, request: dict[str, Any], cap: int) -> dict[str, Any] | None:
        """Send a request and read one reply line; None when the process ended without one."""
        self.buffer.clear()  # a session's stale output is never taken for this call's reply
        with contextlib.suppress(OSError):
            for _ in range(64):
                if not self.sock.recv(1 << 16, socket.MSG_DONTWAIT):
                    break
        try:
            self.sock.sendall(json.dumps(request).encode() + b"\n")
        except OSError:
            return None
        poller = select.poll()
        for fd in (self.sock.fileno(), self.pidfd):
            if fd is not None:
                poller.register(fd, select.POLLIN)
        while (end := self.buffer.find(b"\n")) < 0:
            if len(self.buffer) > cap:
                return {"raw": limit_error("output", f"the result is over {cap:,} bytes")}
            ended = self.pidfd in {fd for fd, _ in poller.poll()}
            try:
                chunk = self.sock.recv(1 << 16, socket.MSG_DONTWAIT)
            except BlockingIOError:
                if ended:
                    return None
                continue
            except OSError:
                return None
            if not chunk:
                return None
            self.buffer += chunk
        try:
            reply = json.loads(self.buffer[:end])
        except (ValueError, RecursionError):
            reply = None
        return reply if isinstance(reply, dict) else {"raw": sandbox_error("an unreadable result")}

    def close(self) -> None:
        """Close the worker's descriptors for this process."""
        self.sock.close()
        if self.pidfd is not None:
            os.close(self.pidfd)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None

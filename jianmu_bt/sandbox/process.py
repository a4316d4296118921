"""WorkerProcess: the parent's handle on one LocalSandbox worker process.

The channel is a Unix socket pair on the child's stdin/stdout, read without blocking through the
event loop (`anyio.wait_readable`), so a worker is not tied to the event loop that started it.
Killing is synchronous and total: the process group, then everything left in the worker's cgroup
(or, without one, in its session), then the worker is reaped. It is safe to call from a
cancellation path and from a finaliser.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from jianmu_bt.sandbox.cgroups import CgroupSet

_READ_CHUNK = 1 << 16


class WorkerGone(Exception):
    """The worker closed its channel (it exited or was killed)."""


class ReplyTooLarge(Exception):
    """A reply line grew past the byte cap before it ended."""


def session_pids(sid: int) -> set[int]:
    """Processes whose session id is `sid` (the fallback when there is no cgroup)."""
    found: set[int] = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                data = handle.read()
            fields = data[data.rindex(b")") + 2 :].split()
            if int(fields[3]) == sid:  # state ppid pgrp session
                found.add(int(entry.name))
    return found


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
            self.kill()
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

    def extra_processes(self) -> set[int]:
        """Processes the calls started that are still running (the worker itself excluded)."""
        if self.cgroup is not None:
            if self.cgroup.task_count() <= 1:
                return set()
            return self.cgroup.pids() - {self.pid}
        return session_pids(self.pid) - {self.pid}

    def sweep(self) -> None:
        """Kill whatever the last call left running, keeping the worker."""
        extra = self.extra_processes()
        if not extra:
            return
        if self.cgroup is not None:
            self.cgroup.kill_all(exclude=self.pid)
        for pid in extra:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def kill(self) -> None:
        """Kill the worker and everything it started; reap it; remove its cgroup. Idempotent."""
        if self._killed:
            return
        self._killed = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        if self.cgroup is not None:
            self.cgroup.kill_all()
        else:
            end = time.monotonic() + 3
            while (pids := session_pids(self.pid)) and time.monotonic() < end:
                for pid in pids:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                time.sleep(0.002)
        self._reap()
        self.sock.close()
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        if self.cgroup is not None:
            self._final_hits = self.cgroup.hits()
            self.cgroup.remove()

    def _reap(self) -> None:
        # wait4, not Popen.wait: the resource usage tells a CPU-limit kill from other kills.
        if self.proc.returncode is not None:
            return
        with contextlib.suppress(ChildProcessError):
            _, status, usage = os.wait4(self.pid, 0)
            self.proc.returncode = os.waitstatus_to_exitcode(status)
            self.cpu_used = usage.ru_utime + usage.ru_stime

    @property
    def alive(self) -> bool:
        """Whether the worker is still running and usable."""
        return not self._killed and self.proc.poll() is None

    def exit_signal(self) -> int | None:
        """The signal that ended the worker, if one did (after it exited)."""
        code = self.proc.poll()
        return -code if code is not None and code < 0 else None

"""ChildProcess: the sandbox worker's handle on one call process it runs untrusted code in.

The worker's side of the channel to a call process (forked by the fork server): one JSON request
a line, one JSON reply a line, waited for with a blocking `poll` on the socket together with a
pidfd that turns readable when the process ends without a reply.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
from typing import Any

from jianmu_bt.sandbox.failures import limit_error, sandbox_error


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
        self.pidfd = pidfd_open(pid)

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

"""AttachChannel: the worker protocol over a container's attached stdin/stdout.

Docker multiplexes the container's stdout and stderr on the attach socket in frames (an 8-byte
header: stream number, three zero bytes, a big-endian length). The socket is read without blocking
through the event loop, like LocalSandbox's channel; docker SDK calls (start, inspect, remove)
block, so they run in worker threads.
"""

from __future__ import annotations

import contextlib
import json
import ssl
import struct
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from jianmu_bt.sandbox.process import ReplyTooLarge

_HEADER = struct.Struct(">BxxxL")
_STDOUT, _STDERR = 1, 2
_WAIT = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


class ChannelClosed(Exception):
    """The container's output ended (its worker exited or the container was removed)."""


def _host_hits(container_id: str) -> dict[str, int]:
    """The container's pids-limit counter read from the host, when the engine runs here."""
    for directory in (
        f"/sys/fs/cgroup/pids/docker/{container_id}",
        f"/sys/fs/cgroup/system.slice/docker-{container_id}.scope",
        f"/sys/fs/cgroup/docker/{container_id}",
    ):
        events = Path(directory, "pids.events")
        with contextlib.suppress(OSError, ValueError):
            for line in events.read_text().splitlines():
                if line.startswith("max "):
                    return {"processes": int(line.split()[1])}
    return {}


class AttachChannel:
    """One container running the sandbox worker: send requests, read replies, remove it."""

    def __init__(self, client: Any, container: Any) -> None:
        self.client = client
        self.container = container
        self.usable = True
        self.hits: dict[str, int] = {}
        self._response: Any = None
        self._sock: Any = None
        self._frames = bytearray()
        self._stdout = bytearray()
        self._stderr = bytearray()
        self._removed = False

    async def start(self, config: dict[str, Any]) -> dict[str, Any]:
        """Attach, start the container, send the configuration and wait until it is ready."""

        def attach_and_start() -> Any:
            params = {"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
            response = self.client.api.attach_socket(self.container.id, params=params)
            self.container.start()
            return response

        self._response = await anyio.to_thread.run_sync(attach_and_start)
        self._sock = getattr(self._response, "_sock", self._response)
        self._sock.setblocking(False)
        await self._send(config)
        try:
            ready = json.loads(await self._read_line(1 << 20))
        except (ChannelClosed, ValueError, ReplyTooLarge):
            ready = {"ready": False}
        if not ready.get("ready"):
            tail = self._stderr.decode(errors="replace").strip()[-2000:]
            reason = ready.get("error") or tail or "no reply"
            raise RuntimeError(f"the sandbox worker in the container failed to start: {reason}")
        self.hits = ready.get("hits") or {}
        return ready

    async def request(self, message: dict[str, Any], cap: int) -> dict[str, Any]:
        """Send one request and return its reply (ChannelClosed / ReplyTooLarge on failure)."""
        await self._send(message)
        line = await self._read_line(cap)
        try:
            reply = json.loads(line)
        except ValueError as exc:
            raise ChannelClosed(f"the worker sent an unreadable reply ({exc})") from exc
        self.hits = reply.get("hits") or self.hits
        return reply

    async def _send(self, message: dict[str, Any]) -> None:
        data = memoryview(json.dumps(message).encode() + b"\n")
        while data:
            try:
                data = data[self._sock.send(data) :]
            except _WAIT:
                await anyio.wait_writable(self._sock)
            except OSError as exc:
                raise ChannelClosed(str(exc)) from exc

    def stray_bytes(self) -> int:
        """Bytes of output that arrived after the last reply (nothing else may write there)."""
        with contextlib.suppress(*_WAIT, OSError):
            while chunk := self._sock.recv(1 << 16):  # what has arrived by now, without waiting
                self._frames += chunk
                self._demux()
        return len(self._stdout)

    def _demux(self) -> None:
        while len(self._frames) >= _HEADER.size:
            stream, size = _HEADER.unpack_from(self._frames)
            if len(self._frames) < _HEADER.size + size:
                return
            payload = bytes(self._frames[_HEADER.size : _HEADER.size + size])
            del self._frames[: _HEADER.size + size]
            if stream == _STDOUT:
                self._stdout += payload
            elif stream == _STDERR:
                self._stderr = (self._stderr + payload)[-8192:]

    async def _read_line(self, cap: int) -> bytes:
        while True:
            end = self._stdout.find(b"\n")
            if end >= 0:
                line = bytes(self._stdout[:end])
                del self._stdout[: end + 1]
                return line
            if len(self._stdout) > cap:
                raise ReplyTooLarge(len(self._stdout))
            try:
                chunk = self._sock.recv(1 << 16)
            except _WAIT:
                await anyio.wait_readable(self._sock)
                continue
            except OSError as exc:
                raise ChannelClosed(str(exc)) from exc
            if not chunk:
                raise ChannelClosed("the container's output ended")
            self._frames += chunk
            self._demux()

    def refresh_hits(self) -> None:
        """Merge in the counters the host sees (they outlive a worker killed mid-call)."""
        host = _host_hits(self.container.id)
        if host.get("processes", 0) > self.hits.get("processes", 0):
            self.hits = {**self.hits, **host}

    async def state(self) -> dict[str, Any]:
        """The container's State after its worker ended (OOMKilled, ExitCode, ...)."""

        def inspect() -> dict[str, Any]:
            with contextlib.suppress(Exception):
                self.container.wait(timeout=5)
            self.container.reload()
            return dict(self.container.attrs.get("State") or {})

        try:
            return await anyio.to_thread.run_sync(inspect)
        except Exception:
            return {}

    async def remove(self) -> None:
        """Kill and remove the container (idempotent); keeps the last limit counters."""
        if self._removed:
            return
        self._removed = True
        self.usable = False
        self.refresh_hits()
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()

        def remove() -> None:
            with contextlib.suppress(Exception):
                self.container.remove(force=True)

        await anyio.to_thread.run_sync(remove)

"""AttachChannel: the worker protocol over a container's attached stdin/stdout.

Docker multiplexes the container's stdout and stderr on the attach socket in frames (an 8-byte
header: stream number, three zero bytes, a big-endian length); `_received` takes them apart, and
the lines of stdout are the worker's channel (`channel.LineChannel`), read without blocking through
the event loop like LocalSandbox's. Docker SDK calls (start, inspect, remove) block, so they run in
worker threads.
"""

from __future__ import annotations

import contextlib
import struct
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from jianmu_bt.sandbox.channel import LineChannel

_HEADER = struct.Struct(">BxxxL")
_STDOUT, _STDERR = 1, 2


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


class AttachChannel(LineChannel):
    """One container running the sandbox worker: send requests, read replies, remove it."""

    def __init__(self, client: Any, container: Any) -> None:
        super().__init__()
        self.client = client
        self.container = container
        self.usable = True
        self._hits: dict[str, int] = {}
        self._response: Any = None
        self._frames = bytearray()
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
        sock = getattr(self._response, "_sock", self._response)
        sock.setblocking(False)
        self._sock = sock
        self.queue(config)
        ready = await self.read_ready()
        if not ready.get("ready"):
            tail = self._stderr.decode(errors="replace").strip()[-2000:]
            reason = ready.get("error") or tail or "no reply"
            raise RuntimeError(f"the sandbox worker in the container failed to start: {reason}")
        self._hits = ready.get("hits") or {}
        return ready

    async def request(self, message: dict[str, Any], cap: int) -> dict[str, Any]:
        """Send one request and return its reply (ChannelClosed / ReplyTooLarge on failure)."""
        reply = await super().request(message, cap)
        self._hits = reply.get("hits") or self._hits
        return reply

    def hits(self) -> dict[str, int]:
        """The limit counters the worker last reported (merged with the host's, see
        `refresh_hits`)."""
        return self._hits

    def _received(self, chunk: bytes) -> None:
        self._frames += chunk
        while len(self._frames) >= _HEADER.size:
            stream, size = _HEADER.unpack_from(self._frames)
            if len(self._frames) < _HEADER.size + size:
                return
            payload = bytes(self._frames[_HEADER.size : _HEADER.size + size])
            del self._frames[: _HEADER.size + size]
            if stream == _STDOUT:
                self._lines += payload
            elif stream == _STDERR:
                self._stderr = (self._stderr + payload)[-8192:]

    def refresh_hits(self) -> None:
        """Merge in the counters the host sees (they outlive a worker killed mid-call)."""
        host = _host_hits(self.container.id)
        if host.get("processes", 0) > self._hits.get("processes", 0):
            self._hits = {**self._hits, **host}

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
        self._close_socket()

        def remove() -> None:
            with contextlib.suppress(Exception):
                self.container.remove(force=True)

        await anyio.to_thread.run_sync(remove)

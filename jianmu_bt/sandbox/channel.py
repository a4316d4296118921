"""LineChannel: the parent's end of the JSON-lines protocol it speaks with a sandbox worker.

One JSON object a line each way over a non-blocking socket: a Unix socket pair on a LocalSandbox
worker's stdin/stdout, a container's attach socket for DockerSandbox (whose frames
`docker_channel.AttachChannel` takes apart in `_received`). Reads and writes wait through the
event loop (`anyio.wait_readable` / `wait_writable`), so a channel is not tied to the event loop
that opened it.
"""

from __future__ import annotations

import contextlib
import json
import ssl
from typing import Any, Protocol

import anyio

_READ_CHUNK = 1 << 16
#: A ready line (the worker's report of what it applied) may be this long at the most.
READY_CAP = 1 << 20
#: Errors that only mean "not now" on a non-blocking (possibly TLS) socket.
WOULD_BLOCK = (BlockingIOError, InterruptedError, ssl.SSLWantReadError, ssl.SSLWantWriteError)


class ChannelClosed(Exception):
    """The worker's channel ended: it exited, was killed, or its container was removed."""


class ReplyTooLarge(Exception):
    """A reply line grew past the byte cap before it ended."""


class ChannelSocket(Protocol):
    """The socket calls a channel makes (a socket, a TLS socket, the docker SDK's socket)."""

    def send(self, data: memoryview, /) -> int:
        """Send what the socket takes now; return how many bytes it took."""
        ...

    def recv(self, bufsize: int, /) -> bytes:
        """Receive what has arrived (b"" at the end)."""
        ...

    def fileno(self) -> int:
        """The descriptor the event loop waits on."""
        ...

    def close(self) -> None:
        """Close the socket."""
        ...


class LineChannel:
    """Send JSON lines to a worker and read its JSON-line replies, waiting through the event loop.

    A subclass sets `_sock` before the first exchange and may override `_received` (how raw bytes
    from the socket become line bytes).
    """

    def __init__(self) -> None:
        self._sock: ChannelSocket | None = None
        self._lines = bytearray()  # line bytes received but not yet taken as a line
        self._pending = memoryview(b"")  # a message queued but not yet sent

    def _socket(self) -> ChannelSocket:
        if self._sock is None:
            raise ChannelClosed("the channel is not open")
        return self._sock

    def _close_socket(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()

    def queue(self, message: dict[str, Any]) -> None:
        """Queue `message` to go out with the next `flush` (needs no event loop)."""
        self._pending = memoryview(json.dumps(message).encode() + b"\n")

    async def flush(self) -> None:
        """Send what is queued; raises ChannelClosed when the worker is gone."""
        sock = self._socket()
        while self._pending:
            try:
                sent = sock.send(self._pending)
            except WOULD_BLOCK:
                await anyio.wait_writable(sock)
                continue
            except OSError as exc:
                raise ChannelClosed(str(exc)) from exc
            self._pending = self._pending[sent:]

    def _received(self, chunk: bytes) -> None:
        """Take in raw bytes read from the socket (a plain stream: they are line bytes)."""
        self._lines += chunk

    async def read_line(self, cap: int) -> bytes:
        """The next line (without its newline); ReplyTooLarge past `cap` bytes, ChannelClosed
        when the channel ends first."""
        sock = self._socket()
        while True:
            end = self._lines.find(b"\n")
            if end >= 0:
                line = bytes(self._lines[:end])
                del self._lines[: end + 1]
                return line
            if len(self._lines) > cap:
                raise ReplyTooLarge(len(self._lines))
            try:
                chunk = sock.recv(_READ_CHUNK)
            except WOULD_BLOCK:
                await anyio.wait_readable(sock)
                continue
            except OSError as exc:
                raise ChannelClosed(str(exc)) from exc
            if not chunk:
                raise ChannelClosed("the worker's channel ended")
            self._received(chunk)

    async def request(self, message: dict[str, Any], cap: int) -> dict[str, Any]:
        """Send one request and return its reply (ChannelClosed / ReplyTooLarge on failure)."""
        self.queue(message)
        await self.flush()
        line = await self.read_line(cap)
        try:
            reply = json.loads(line)
        except ValueError as exc:
            raise ChannelClosed(f"the worker sent an unreadable reply ({exc})") from exc
        if not isinstance(reply, dict):
            raise ChannelClosed("the worker sent a reply that is not a JSON object")
        return reply

    async def read_ready(self) -> dict[str, Any]:
        """Send what is queued (the configuration) and read the worker's ready line; a worker
        that ends, or answers with anything but a JSON object, is `{"ready": False}`."""
        try:
            await self.flush()
            ready = json.loads(await self.read_line(READY_CAP))
        except (ChannelClosed, ValueError, ReplyTooLarge):
            return {"ready": False}
        return ready if isinstance(ready, dict) else {"ready": False}

    def stray_bytes(self) -> int:
        """Bytes that arrived after the last reply, by now (a sound worker writes exactly one
        line per request, so anything more means something else writes on the channel)."""
        if self._sock is not None:
            with contextlib.suppress(*WOULD_BLOCK, OSError):
                # What has arrived, without waiting; bounded, since a writer may never stop.
                for _ in range(64):
                    if self._lines or not (chunk := self._sock.recv(_READ_CHUNK)):
                        break
                    self._received(chunk)
        return len(self._lines)

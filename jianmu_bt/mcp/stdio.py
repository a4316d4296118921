"""A stdio transport for MCP servers that owns the server's whole process group.

The SDK's `stdio_client` starts the server in a new session too, but it kills the group only
when the server outlives the grace period after its stdin closes; a server that exits politely
leaves its own children running. It also writes the server's stderr to a file given by the
caller, without bound. This transport yields the same `(read, write)` stream pair and differs
in four ways:

- the server's process group is always ended when the transport closes, after a timeout, or as
  soon as the server process itself exits (so orphaned helpers holding its stdout cannot keep a
  dead server looking alive): SIGTERM, a grace period, SIGKILL (see `process_group`);
- stderr is read through a pipe and only its last `limit` bytes are kept (`StderrTail`), so a
  server that floods stderr costs bounded memory and no disk, and errors quote the latest lines;
- stdout is split into messages in linear time, and a message longer than `max_message_bytes`
  faults the connection and ends the server (an endless line costs bounded memory and CPU);
- a synchronous SIGKILL of the group runs last, even when the closing task is torn down abruptly.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import IO, TYPE_CHECKING, Any

import anyio

from jianmu_bt.mcp.config import DEFAULT_STDERR_LIMIT, DEFAULT_STOP_GRACE
from jianmu_bt.mcp.process_group import ProcessGroup

if TYPE_CHECKING:
    from anyio.abc import Process

    from jianmu_bt.mcp.config import MCPServerConfig

logger = logging.getLogger(__name__)

#: Seconds allowed to flush messages already accepted before stdin closes.
WRITER_FLUSH_TIMEOUT = 0.5
#: Seconds allowed for the stderr reader to reach the end of the pipe after the group ended.
STDERR_DRAIN_TIMEOUT = 1.0
#: Seconds between SIGTERM and SIGKILL for a server that never finished the handshake: it was
#: given its whole `connect_timeout` already, so its end must not stretch that deadline.
ABORT_GRACE = 0.1
_PIPE_ERRORS = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)


class StderrTail:
    """The last `limit` bytes written to a stream: bounded memory whatever the writer does."""

    def __init__(self, limit: int = DEFAULT_STDERR_LIMIT) -> None:
        if limit < 1:
            raise ValueError(f"the stderr limit must be at least 1 byte, got {limit}")
        self.limit = limit
        #: Bytes seen in total (kept or not).
        self.total = 0
        self._buffer = bytearray()

    def feed(self, data: bytes) -> None:
        """Append `data`, dropping the oldest bytes beyond `limit`."""
        self.total += len(data)
        if len(data) >= self.limit:
            self._buffer[:] = data[-self.limit :]
            return
        self._buffer += data
        excess = len(self._buffer) - self.limit
        if excess > 0:
            del self._buffer[:excess]

    def __len__(self) -> int:
        return len(self._buffer)

    def text(self, chars: int | None = None) -> str:
        """The kept bytes decoded (bad UTF-8 replaced), the last `chars` characters only."""
        decoded = self._buffer.decode("utf-8", errors="replace")
        return decoded if chars is None else decoded[-chars:]

    def clear(self) -> None:
        """Forget everything kept so far."""
        self.total = 0
        self._buffer = bytearray()


def _forward(errlog: IO[Any] | None, data: bytes) -> None:
    """Also copy stderr to a caller's file (bytes or text); its failures are ignored."""
    if errlog is None:
        return
    try:
        try:
            errlog.write(data)
        except TypeError:
            errlog.write(data.decode("utf-8", errors="replace"))
        errlog.flush()
    except (OSError, ValueError):
        pass


async def _pump_stderr(process: Process, tail: StderrTail, errlog: IO[Any] | None) -> None:
    assert process.stderr is not None
    with suppress(*_PIPE_ERRORS):
        while True:
            data = await process.stderr.receive()
            tail.feed(data)
            _forward(errlog, data)


def _parse_line(line: str) -> Any:
    """One stdout line as a SessionMessage, or the parse error (the session reports it)."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as exc:
        logger.warning("MCP server sent a line that is not JSON-RPC: %.200s", line)
        return exc
    return SessionMessage(message)


class MessageTooLargeError(Exception):
    """A stdio server wrote a message (a line) longer than the connection allows."""


async def _pump_stdout(
    process: Process, sink: Any, limit: int, fault: Callable[[str], Awaitable[None]]
) -> None:
    """Server stdout -> session, one JSON-RPC message per line; ends the read stream at EOF.

    Each chunk is scanned once for line ends, so reading costs time linear in the bytes read,
    however long a line. A line longer than `limit` bytes faults the connection: the session
    gets the error, the read stream ends and `fault(reason)` ends the server's process group.
    Once the session stops listening, the rest is read and dropped, so a server blocked on a
    full stdout pipe can still see its stdin close and exit by itself.
    """
    assert process.stdout is not None
    async with sink:
        pending = bytearray()
        with suppress(*_PIPE_ERRORS):
            async for chunk in process.stdout:
                start = 0
                while (end := chunk.find(b"\n", start)) >= 0:
                    pending += chunk[start:end]
                    start = end + 1
                    if len(pending) > limit:
                        break
                    line = pending.decode("utf-8", errors="replace")
                    pending.clear()
                    if line.strip():
                        await sink.send(_parse_line(line))
                else:
                    pending += chunk[start:]
                if len(pending) > limit:
                    error = MessageTooLargeError(
                        f"the MCP server sent a message longer than {limit} bytes "
                        "(max_message_bytes); the connection was closed and the server stopped"
                    )
                    logger.warning("%s", error)
                    await sink.send(error)
                    await fault(str(error))
                    return
    with suppress(*_PIPE_ERRORS):
        while True:
            await process.stdout.receive()


async def _pump_stdin(process: Process, source: Any, sink: Any, done: anyio.Event) -> None:
    """Session -> server stdin; a broken pipe ends the read stream so no request hangs."""
    assert process.stdin is not None
    try:
        async with source:
            async for session_message in source:
                json = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send((json + "\n").encode())
    except _PIPE_ERRORS:
        await sink.aclose()
    finally:
        done.set()


async def _watch_exit(process: Process, group: ProcessGroup) -> None:
    """When the server process exits, end what it left behind in its group."""
    await process.wait()
    await group.terminate()


async def _close_quietly(*resources: Any) -> None:
    for resource in resources:
        with suppress(*_PIPE_ERRORS):
            await resource.aclose()


async def _spawn(config: MCPServerConfig) -> Process:
    """Start the server in a session of its own, its three standard streams piped."""
    from mcp.client.stdio import get_default_environment

    assert config.command is not None
    return await anyio.open_process(
        [config.command, *config.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=get_default_environment() | (config.env or {}),
        cwd=config.cwd,
        start_new_session=True,
    )


@asynccontextmanager
async def stdio_transport(
    config: MCPServerConfig,
    tail: StderrTail,
    *,
    errlog: IO[Any] | None = None,
    exit_grace: float = DEFAULT_STOP_GRACE,
    term_grace: float = DEFAULT_STOP_GRACE,
    abrupt: Callable[[], bool] | None = None,
) -> AsyncIterator[tuple[Any, Any]]:
    """Start `config.command` in a new session and yield the SDK's `(read, write)` streams.

    The environment is the SDK's minimal safe one plus `config.env`. On exit (or cancellation)
    stdin is closed, the server gets `exit_grace` seconds to exit, and then its whole process
    group is ended (SIGTERM, `term_grace` seconds, SIGKILL), whether or not it exited.
    When `abrupt()` is true at that point (the handshake never finished: there is nothing to
    wind down) the group is ended at once instead (SIGTERM, ABORT_GRACE seconds, SIGKILL).
    """
    from mcp.shared.message import SessionMessage

    assert config.command is not None
    # Shielded: a cancel that lands while the process is being created would leave it running
    # with nobody to end it; past this point the `finally` below ends it.
    with anyio.CancelScope(shield=True):
        process = await _spawn(config)
    group = ProcessGroup(process.pid, term_grace=term_grace)
    try:
        read_sink, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, write_source = anyio.create_memory_object_stream[SessionMessage](0)
        writer_done, stderr_done = anyio.Event(), anyio.Event()

        async def pump_stderr() -> None:
            try:
                await _pump_stderr(process, tail, errlog)
            finally:
                stderr_done.set()

        async with anyio.create_task_group() as tg:

            async def fault(reason: str) -> None:
                tail.feed(f"\n[client] {reason}\n".encode())  # error messages quote the tail
                await group.terminate()

            limit = config.max_message_bytes
            tg.start_soon(_pump_stdout, process, read_sink, limit, fault)
            tg.start_soon(_pump_stdin, process, write_source, read_sink, writer_done)
            tg.start_soon(pump_stderr)
            tg.start_soon(_watch_exit, process, group)
            try:
                yield read_stream, write_stream
            finally:
                with anyio.CancelScope(shield=True):
                    read_stream.close()
                    write_stream.close()
                    if abrupt is not None and abrupt():
                        await group.terminate(ABORT_GRACE)
                    else:
                        with anyio.move_on_after(WRITER_FLUSH_TIMEOUT):
                            await writer_done.wait()
                        await _close_quietly(process.stdin)
                        with anyio.move_on_after(exit_grace):
                            await process.wait()
                        await group.terminate()
                    # Every writer is gone now: let the reader take in the last of stderr.
                    with anyio.move_on_after(STDERR_DRAIN_TIMEOUT):
                        await stderr_done.wait()
                tg.cancel_scope.cancel()
    finally:
        group.kill_now()  # the last resort when the shielded path above was torn down
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(STDERR_DRAIN_TIMEOUT):
                await process.wait()
            if process.returncode is None:
                logger.warning("MCP server process %d survived SIGKILL; abandoning it", process.pid)
            else:
                await _close_quietly(process)


__all__ = ["MessageTooLargeError", "StderrTail", "stdio_transport"]

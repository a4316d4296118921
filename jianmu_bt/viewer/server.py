"""The viewer's HTTP server: uvicorn on 127.0.0.1 in a thread of its own, started and stopped
by the caller (a command waiting for Ctrl-C, a run going on in the main thread, a test).

Port 0 takes any free port: the socket is bound here first, so the URL printed is the real one.
`stop()` ends the event streams, lets uvicorn close its connections and joins the thread; a
server that does not stop within its timeout is reported, not left silently behind.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from typing import Any

from jianmu_bt.http_guard import Access
from jianmu_bt.viewer.deps import require_viewer_packages
from jianmu_bt.viewer.sources import Source

logger = logging.getLogger(__name__)

#: The only address the viewer binds.
HOST = "127.0.0.1"
#: Seconds to wait for the server to start, and to stop.
START_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0


class ViewerError(RuntimeError):
    """The viewer's server could not start (port taken, not allowed, ...)."""


class ViewerServer:
    """A running viewer for one source: `start()`, `url`, `token`, `stop()` (or `with`)."""

    def __init__(self, source: Source, *, port: int = 0, access: Access | None = None) -> None:
        require_viewer_packages()
        if not 0 <= port <= 65535:
            raise ViewerError(f"--port {port}: give a port from 1 to 65535, or 0 for any free one")
        self.source = source
        self.access = access or Access()
        self._port = port
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None

    @property
    def token(self) -> str:
        """The token every `/api/` request needs (reading the run, approving, denying)."""
        return self.access.token

    @property
    def url(self) -> str:
        """The page's address."""
        return f"http://{HOST}:{self.access.port}/"

    def start(self) -> ViewerServer:
        """Bind the port and serve in a background thread; returns once it accepts requests."""
        import uvicorn

        from jianmu_bt.viewer.app import create_app

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, self._port))
        except OSError as exc:
            sock.close()
            raise ViewerError(f"cannot listen on {HOST}:{self._port} ({exc.strerror})") from None
        sock.listen(128)
        self._socket = sock
        self.access.port = sock.getsockname()[1]
        config = uvicorn.Config(
            create_app(self.source, self.access),
            log_level="warning",
            lifespan="off",
            timeout_graceful_shutdown=2,
            access_log=False,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="jianmu-viewer", daemon=True
        )
        self._thread.start()
        ready = threading.Event()
        for _ in range(int(START_TIMEOUT / 0.02)):
            if self._server.started or not self._thread.is_alive():
                ready.set()
                break
            ready.wait(0.02)
        if not self._server.started:
            self.stop()
            raise ViewerError("the viewer's server did not start")
        return self

    def wait(self) -> None:
        """Block until the server stops (Ctrl-C raises KeyboardInterrupt here)."""
        while self._thread is not None and self._thread.is_alive():
            self._thread.join(0.25)

    def stop(self) -> None:
        """End the streams and the server; idempotent."""
        self.source.hub.finish()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT)
            if self._thread.is_alive():
                raise ViewerError("the viewer's server did not stop in time")
            self._thread = None
        if self._socket is not None:
            with contextlib.suppress(OSError):
                self._socket.close()
            self._socket = None

    def __enter__(self) -> ViewerServer:
        return self.start()

    def __exit__(self, exc_type: object, exc: object, traceback: object) -> None:
        try:
            self.stop()
        except ViewerError:
            if exc_type is None:
                raise
            # The block's own exception is the one to see; the stop failure is logged.
            logger.warning("the viewer's server did not stop in time", exc_info=True)

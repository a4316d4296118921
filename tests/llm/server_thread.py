"""Running a test server's ASGI app under uvicorn in a thread, on a free port of 127.0.0.1."""

from __future__ import annotations

import threading
import time
from typing import Any

import uvicorn


class ServerThread:
    """One uvicorn server in a daemon thread: `start()` returns its root URL once it listens,
    `stop()` asks it to exit and waits; `name` names the server in errors and the thread."""

    def __init__(self, app: Any, name: str) -> None:
        config = uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="error", lifespan="off",
            timeout_graceful_shutdown=1,
        )  # fmt: skip
        self.name = name
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name=name, daemon=True)

    def start(self) -> str:
        """Start the server and wait until it listens; its `http://127.0.0.1:<port>`."""
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"the {self.name} server did not start")
            time.sleep(0.01)
        return f"http://127.0.0.1:{self._server.servers[0].sockets[0].getsockname()[1]}"

    def stop(self) -> None:
        """Ask uvicorn to exit and wait for its thread."""
        if self._thread.is_alive():
            self._server.should_exit = True
            self._thread.join(timeout=10)
            if self._thread.is_alive():
                raise RuntimeError(f"the {self.name} server did not stop")

"""Fixtures for the built-in tool tests: workspaces with traps, real HTTP servers on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

#: Every built-in tool that works in a workspace.
FILE_TOOLS = [
    "read_file",
    "write_file",
    "list_dir",
    "file_info",
    "str_replace",
    "glob_search",
    "grep_search",
]

SECRET = "TOP-SECRET-42"

Route = Callable[["Handler"], None]


@dataclass
class Layout:
    """A workspace and the things around it that no tool may touch."""

    root: Path  # the workspace
    outside: Path  # a directory next to it with a secret
    evil: Path  # a sibling whose name starts with the workspace's name
    secret_file: Path

    def outside_snapshot(self) -> dict[str, bytes]:
        """Every file outside the workspace (under the test's tmp dir) with its content."""
        base = self.root.parent
        return {
            str(p.relative_to(base)): p.read_bytes()
            for p in sorted(base.rglob("*"))
            if p.is_file() and not p.is_symlink() and not p.is_relative_to(self.root)
        }


@pytest.fixture
def layout(tmp_path: Path) -> Layout:
    """ws/ with files and symlinks that lead out; outside/ and ws_evil/ with secrets."""
    root = tmp_path / "ws"
    outside = tmp_path / "outside"
    evil = tmp_path / "ws_evil"
    for d in (root, outside, evil, root / "sub" / "deep"):
        d.mkdir(parents=True)
    secret = outside / "secret.txt"
    secret.write_text(SECRET + "\n")
    (evil / "x.txt").write_text(SECRET + " evil\n")
    (root / "inner.txt").write_text("inner text\n")
    (root / "sub" / "deep" / "note.md").write_text("deep note\n")
    (root / "link_file").symlink_to(secret)
    (root / "link_dir").symlink_to(outside, target_is_directory=True)
    (root / "evil_link").symlink_to(evil, target_is_directory=True)
    (root / "rel_link").symlink_to("../outside/secret.txt")
    (root / "dangling_out").symlink_to(outside / "missing.txt")
    (root / "chain1").symlink_to(root / "chain2")
    (root / "chain2").symlink_to(outside, target_is_directory=True)
    (root / "loop_a").symlink_to(root / "loop_b")
    (root / "loop_b").symlink_to(root / "loop_a")
    (root / "sub" / "up").symlink_to("../../outside", target_is_directory=True)
    (root / "inside_link").symlink_to(root / "inner.txt")
    return Layout(root=root, outside=outside, evil=evil, secret_file=secret)


class Handler(BaseHTTPRequestHandler):
    """Dispatches to the server's routes; records every request it sees."""

    server: LocalHTTPServer

    def _dispatch(self) -> None:
        self.server.hits.append((self.command, self.path))
        length = int(self.headers.get("Content-Length") or 0)
        self.body = self.rfile.read(length) if length else b""
        route = self.server.routes.get(self.path.split("?", 1)[0])
        if route is None:
            self.reply(404, b"not found")
        else:
            route(self)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _dispatch

    def reply(
        self, status: int, body: bytes, content_type: str = "text/plain; charset=utf-8", **headers
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def reply_json(self, data: Any, status: int = 200) -> None:
        self.reply(status, json.dumps(data).encode(), "application/json")

    def redirect(self, location: str, status: int = 302) -> None:
        self.reply(status, b"", Location=location)

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass


class LocalHTTPServer(ThreadingHTTPServer):
    """A real HTTP server on a loopback address, run in a thread by the `http_server` fixtures."""

    daemon_threads = True

    def __init__(self, host: str) -> None:
        super().__init__((host, 0), Handler)
        self.routes: dict[str, Route] = {}
        self.hits: list[tuple[str, str]] = []
        self.release = threading.Event()  # wakes slow handlers at teardown

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"


@dataclass
class Servers:
    started: list[tuple[LocalHTTPServer, threading.Thread]] = field(default_factory=list)

    def start(self, host: str = "127.0.0.1") -> LocalHTTPServer:
        server = LocalHTTPServer(host)
        thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
        thread.start()
        self.started.append((server, thread))
        return server

    def stop_all(self) -> None:
        for server, thread in self.started:
            server.release.set()
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)
            assert not thread.is_alive(), "an HTTP server thread was left running"


@pytest.fixture
def servers() -> Iterator[Servers]:
    """Starts real HTTP servers on loopback addresses; stops and joins them afterwards."""
    pool = Servers()
    yield pool
    pool.stop_all()

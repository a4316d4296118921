"""Helpers for the MCP tests: server commands, our HTTP server as a process, /proc checks."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PYTHON = sys.executable
FAULTY_SERVER = str(HERE / "mcp_faulty_server.py")
#: What our server subprocesses need on their path: the sample tools and the package.
SERVER_ENV = {"PYTHONPATH": f"{HERE}{os.pathsep}{ROOT}"}
SAMPLE_TOOLS = "mcp_sample_tools:ALL"


def serve_args(*extra: str, tools: str = SAMPLE_TOOLS) -> list[str]:
    """Arguments for `python -m jianmu_bt.mcp serve` with the sample tools."""
    return ["-m", "jianmu_bt.mcp", "serve", "--tools", tools, *extra]


def alive(pid: int) -> bool:
    """True while `pid` is a process that is not a zombie. (A process may end between opening
    its /proc entry and reading it: ESRCH, an OSError, as a missing entry is.)"""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def descendants() -> set[int]:
    """Live (non-zombie) descendant processes of this test process, read from /proc."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(entry)] = int(fields[1])
    found, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - found
        found |= frontier
    return found


class HTTPServer:
    """Our MCP server as a real process on 127.0.0.1 (port chosen by the OS), with the bearer
    token it printed at start (`headers` carry it), or without one (`auth=False`: --no-auth)."""

    def __init__(self, *extra: str, tools: str = SAMPLE_TOOLS, auth: bool = True) -> None:
        flags = ("--transport", "http", "--port", "0", *(() if auth else ("--no-auth",)))
        self.proc = subprocess.Popen(
            [PYTHON, *serve_args(*flags, *extra, tools=tools)],
            env={**os.environ, **SERVER_ENV},
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()  # printed once the socket listens
        found = re.search(r"(http://\S+)", line)
        if not found:
            self.stop()
            raise RuntimeError(f"the MCP server did not start: {line}")
        self.url = found.group(1)
        notice = self.proc.stderr.readline()  # how to connect: the token, printed once
        self.token = printed_token(notice)
        self.headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def sdk_client(self, **options: Any) -> AbstractAsyncContextManager[Client]:
        """The official SDK client on this server, sending the token."""
        return sdk_http_client(self.url, self.headers, **options)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr is not None:
            self.proc.stderr.close()


@asynccontextmanager
async def http_transport(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """The SDK's streamable HTTP transport to `url`, sending `headers` (a `Client` target)."""
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


@asynccontextmanager
async def sdk_http_client(
    url: str, headers: dict[str, str], **options: Any
) -> AsyncIterator[Client]:
    """The official SDK client on the streamable HTTP server at `url`, sending `headers`."""
    async with Client(http_transport(url, headers), **options) as client:
        yield client


def printed_token(line: str) -> str:
    """The bearer token a server printed at start on this line ("" when none)."""
    found = re.search(r"Authorization: Bearer (\S+)$", line.strip())
    return found.group(1) if found else ""


#: Where .ci/run installs the reference server `@modelcontextprotocol/server-everything`.
EVERYTHING_DEFAULT = Path.home() / ".cache/jianmu-ci/server-everything/node_modules/.bin"


def everything_command() -> str:
    """The command of the reference server-everything (run it with the argument `stdio`):
    $JIANMU_MCP_EVERYTHING, else where .ci/run installs it. The calling test is skipped when it
    is missing, or fails when JIANMU_REQUIRE_EVERYTHING=1 (CI sets it)."""
    import pytest

    found = os.environ.get("JIANMU_MCP_EVERYTHING") or str(
        EVERYTHING_DEFAULT / "mcp-server-everything"
    )
    if os.access(found, os.X_OK):
        return found
    message = (
        f"the reference MCP server-everything is not installed ({found}); install it with "
        "npm install --prefix ~/.cache/jianmu-ci/server-everything "
        "@modelcontextprotocol/server-everything@2026.8.31"
    )
    if os.environ.get("JIANMU_REQUIRE_EVERYTHING") == "1":
        pytest.fail(f"{message}, but it is required (JIANMU_REQUIRE_EVERYTHING=1)")
    pytest.skip(message)


def run_docs_demo(name: str, folder: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the docs/mcp.md code block that starts with `# {name}` as a script in `folder`
    (the docs' examples are run as written, with this checkout on the path)."""
    text = (ROOT / "docs" / "mcp.md").read_text()
    start = text.index(f"```python\n# {name}")
    demo = folder / name
    demo.write_text(text[start + len("```python\n") : text.index("```\n", start + 10)])
    return subprocess.run(
        [sys.executable, str(demo)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )

"""Attacks on `jianmu mcp serve --transport http` (a real server process on 127.0.0.1, the
official SDK client and raw HTTP requests): no token or a wrong one gets 401 and nothing else;
the token printed at start, read from a private file or from $JIANMU_MCP_TOKEN lets a client in;
a token file others may read, `--no-auth` on a non-loopback host and a foreign Host or Origin
are refused; with `--store`, only the served tree's runs are listed and readable.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client, MCPError
from mcp_test_support import PYTHON, SERVER_ENV, printed_token, sdk_http_client

from jianmu_bt.loader import load_tree
from jianmu_bt.mcp import MCPConnectionError, MCPToolProvider
from jianmu_bt.mcp.serve_access import TOKEN_ENV
from jianmu_bt.store import SQLiteStore
from jianmu_bt.store.records import RunRecord

pytestmark = pytest.mark.anyio
PORT = ("--port", "0")

TREE = """
version: 1
name: served
llm: {provider: scripted, replies: [done]}
tools: [calculator]
root:
  agent: {name: Writer, goal: "Write.", tools: []}
"""
OTHER = TREE.replace("name: served", "name: other")
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


class Served:
    """`jianmu mcp serve --transport http` as a process: its URL and the line after it."""

    def __init__(self, folder: Path, *args: str, env: dict[str, str] | None = None) -> None:
        base = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
        self.proc = subprocess.Popen(
            [PYTHON, "-m", "jianmu_bt.cli", "mcp", "serve", "--transport", "http", *PORT, *args],
            env={**base, **SERVER_ENV, **(env or {})},
            cwd=folder,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        first = self.proc.stderr.readline()
        found = re.search(r"(http://\S+)", first)
        if not found:
            self.stop()
            raise AssertionError(f"the server did not start: {first}")
        self.url = found.group(1)
        self.notice = self.proc.stderr.readline()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        assert self.proc.stderr is not None
        self.proc.stderr.close()


def refused(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run a `serve` that must not start; its exit status and output."""
    return subprocess.run(
        [PYTHON, "-m", "jianmu_bt.cli", "mcp", "serve", "--transport", "http", *args],
        env={**os.environ, **SERVER_ENV},
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    found = tmp_path_factory.mktemp("served")
    (found / "served.yaml").write_text(TREE)
    return found


@pytest.fixture(scope="module")
def server(folder: Path) -> Iterator[Served]:
    running = Served(folder, "--tree", str(folder / "served.yaml"))
    yield running
    running.stop()


def post_initialize(url: str, **headers: str) -> httpx.Response:
    with httpx.Client(timeout=10) as http:
        return http.post(url, json=INITIALIZE, headers={**HEADERS, **headers})


# -- the token -----------------------------------------------------------------------------


def test_a_request_without_the_token_gets_401_and_nothing_else(server: Served) -> None:
    for headers in ({}, {"Authorization": "Bearer"}, {"Authorization": "Basic dXNlcjpwdw=="}):
        answer = post_initialize(server.url, **headers)
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"] == "Bearer"
        assert answer.content == b"" and "mcp-session-id" not in answer.headers


def test_a_wrong_token_gets_401(server: Served) -> None:
    token = printed_token(server.notice)
    for wrong in ("nope", token[:-1], token + "x", token.swapcase(), f"{token} {token}"):
        answer = post_initialize(server.url, Authorization=f"Bearer {wrong}")
        assert answer.status_code == 401 and answer.content == b""


async def test_the_sdk_client_without_the_token_fails_at_once(server: Served) -> None:
    # The SDK reports any HTTP error status as "Server returned an error response".
    with anyio.fail_after(20), pytest.raises(BaseException) as caught:
        async with Client(server.url, read_timeout_seconds=10) as client:
            await client.list_tools()
    error = caught.value
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    assert isinstance(error, MCPError) and "error response" in str(error)
    provider = MCPToolProvider(url=server.url, connect_timeout=5)
    with anyio.fail_after(20), pytest.raises(MCPConnectionError, match="cannot connect"):
        await provider.initialize()
    await provider.close()


async def test_the_printed_token_lets_the_sdk_client_list_and_call_tools(server: Served) -> None:
    token = printed_token(server.notice)
    assert len(token) >= 32 and server.url in server.notice
    headers = {"Authorization": f"Bearer {token}"}
    async with sdk_http_client(server.url, headers, read_timeout_seconds=20) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        result = await client.call_tool("calculator", {"expression": "6*7"})
    assert names == ["calculator"]
    assert not result.is_error and "42" in result.content[0].text


async def test_a_token_from_a_private_file_or_the_environment_is_used(folder: Path) -> None:
    token_file = folder / "token"
    token_file.write_text("file-token-0123456789abcdef\n")
    token_file.chmod(0o600)
    tree = str(folder / "served.yaml")
    for args, env, token in (
        (("--token-file", str(token_file)), {}, "file-token-0123456789abcdef"),
        ((), {TOKEN_ENV: "env-token-0123456789abcdef"}, "env-token-0123456789abcdef"),
    ):
        running = Served(folder, "--tree", tree, *args, env=env)
        try:
            assert token not in running.notice  # a chosen token is never printed
            wrong = post_initialize(running.url, Authorization="Bearer other")
            headers = {"Authorization": f"Bearer {token}"}
            async with sdk_http_client(running.url, headers, read_timeout_seconds=20) as client:
                result = await client.call_tool("calculator", {"expression": "1+1"})
        finally:
            running.stop()
        assert wrong.status_code == 401
        assert "2" in result.content[0].text


# -- refused at start ------------------------------------------------------------------------


def test_a_token_file_others_may_read_is_refused(folder: Path) -> None:
    token_file = folder / "shared-token"
    token_file.write_text("shared-token-0123456789\n")
    token_file.chmod(0o644)
    done = refused(folder, "--tools", "calculator", "--token-file", str(token_file))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1
    assert "--token-file" in lines[0] and "0644" in lines[0] and "chmod 600" in lines[0]


def test_no_auth_on_a_non_loopback_host_is_refused(folder: Path) -> None:
    done = refused(folder, "--tools", "calculator", "--no-auth", "--host", "0.0.0.0")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1
    assert "--no-auth is allowed on a loopback address only" in lines[0]


# -- DNS rebinding and cross-site requests ---------------------------------------------------


def test_a_foreign_host_or_origin_is_refused_even_with_the_token(server: Served) -> None:
    token = f"Bearer {printed_token(server.notice)}"
    port = server.url.split(":")[2].split("/")[0]
    foreign_host = post_initialize(server.url, Authorization=token, Host=f"evil.example:{port}")
    foreign_origin = post_initialize(server.url, Authorization=token, Origin="http://evil.example")
    own_origin = post_initialize(server.url, Authorization=token, Origin=f"http://127.0.0.1:{port}")
    assert foreign_host.status_code == 403 and "evil.example" in foreign_host.text
    assert foreign_origin.status_code == 403 and "origin" in foreign_origin.text
    assert own_origin.status_code == 200


# -- only the served tree's runs ---------------------------------------------------------------


def _record(run_id: str, tree: str, path: Path, digest: str) -> RunRecord:
    now = time.time()
    return RunRecord(
        run_id=run_id,
        tree=tree,
        status="succeeded",
        started=now,
        updated=now,
        tree_path=str(path.resolve()),
        tree_digest=digest,
    )


async def test_only_the_served_trees_runs_are_listed_and_readable(tmp_path: Path) -> None:
    served, other, impostor = tmp_path / "served.yaml", tmp_path / "other.yaml", tmp_path / "x"
    served.write_text(TREE)
    other.write_text(OTHER)
    impostor.mkdir()
    (impostor / "served.yaml").write_text(TREE.replace("Write.", "Copy."))  # same name
    copy = impostor / "served.yaml"
    digests = {}
    for path in (served, other, copy):
        tree = load_tree(path)
        digests[path] = tree.digest
        tree.close()
    with SQLiteStore(tmp_path / "runs.db") as store:
        for record in (
            _record("mine", "served", served, digests[served]),
            _record("mine-before-an-edit", "served", served, "an older digest"),
            _record("theirs", "other", other, digests[other]),
            _record(
                "same-name", "served", impostor / "served.yaml", digests[impostor / "served.yaml"]
            ),
        ):
            store.create_run(record, checkpoint={"state": {"secret": record.run_id}})
    running = Served(tmp_path, "--tree", str(served), "--store", str(tmp_path / "runs.db"))
    headers = {"Authorization": f"Bearer {printed_token(running.notice)}"}
    try:
        async with sdk_http_client(running.url, headers, read_timeout_seconds=20) as client:
            listed = {str(r.uri) for r in (await client.list_resources()).resources}
            mine = await client.read_resource("jianmu://runs/mine")
            checkpoint = await client.read_resource("jianmu://runs/mine/checkpoints/1")
            failures = {}
            for uri in (
                "jianmu://runs/theirs",
                "jianmu://runs/theirs/checkpoints/1",
                "jianmu://runs/same-name",
                "jianmu://runs/same-name/checkpoints/1",
                "jianmu://runs/unknown",
            ):
                with pytest.raises(MCPError) as caught:
                    await client.read_resource(uri)
                failures[uri] = caught.value
    finally:
        running.stop()
    runs = {uri for uri in listed if uri.startswith("jianmu://runs/")}
    assert runs == {"jianmu://runs/mine", "jianmu://runs/mine-before-an-edit"}
    assert '"run_id": "mine"' in mine.contents[0].text
    assert '"secret": "mine"' in checkpoint.contents[0].text
    for uri, error in failures.items():  # as for a run that does not exist, naming no other
        assert error.error.code == -32002, uri
        assert error.error.message == f"no run {uri.split('/checkpoints')[0]}", uri

"""Adversarial corpus for http_request, part two: servers on 127.0.0.1 that try to hold the call
or its memory with endless, slow or oversized responses (bodies without an end, endless chunks,
slow-loris writes, stalled reads, huge header sections, chunk headers and trailers, redirect
loops). Each test asserts a bounded end: an error or a truncated result naming the limit that
ended the call, with traced memory in single-digit megabytes. The helpers come from the bomb
corpus next to this file.
"""

from __future__ import annotations

import pytest
from conftest import Handler, Servers
from test_attack_http_bombs import CAP, call_measured, forever, send_head, stream

pytestmark = pytest.mark.anyio


# -- endless, slow and oversized responses --------------------------------------------------


@pytest.mark.parametrize("chunked", [False, True], ids=["no-length", "chunked"])
async def test_an_endless_body_is_cut_at_the_cap(servers: Servers, chunked: bool) -> None:
    server = servers.start()

    def route(h: Handler) -> None:
        send_head(h, chunked=chunked, Content_Type="text/plain")
        stream(h, forever(b"A" * 65536), chunked=chunked)

    server.routes["/"] = route
    result, peak = await call_measured(f"{server.url}/")
    assert result.ok and result.output["truncated"] is True
    assert (
        result.output["body"] == "A" * CAP and result.output["note"] == f"body cut at {CAP} bytes"
    )
    assert peak < 8 << 20


async def test_endless_tiny_chunks_are_cut_at_the_cap(servers: Servers) -> None:
    server = servers.start()

    def route(h: Handler) -> None:
        send_head(h, chunked=True)
        stream(h, forever(b"z" * 16), chunked=True)

    server.routes["/"] = route
    result, _ = await call_measured(f"{server.url}/", tool_kwargs={"max_response_bytes": 20_000})
    assert result.ok and result.output["truncated"] and len(result.output["body"]) == 20_000


@pytest.mark.parametrize(
    "payload",
    [
        b"HTTP/1.1 200 OK\r\n"
        + b"".join(b"X-Pad-%d: %s\r\n" % (i, b"p" * 1000) for i in range(1000)),
        b"HTTP/1.1 200 OK\r\nX-Huge: " + b"h" * (1 << 20) + b"\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"f" * 300_000 + b"\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" + b"e" * 300_000 + b"\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"
        + b"".join(b"X-Trailer-%d: %s\r\n" % (i, b"t" * 1000) for i in range(300)),
    ],
    ids=["many-headers", "one-huge-header", "huge-chunk-size", "huge-chunk-ext", "huge-trailers"],
)
async def test_a_huge_header_section_is_refused(servers: Servers, payload: bytes) -> None:
    server = servers.start()

    def route(h: Handler) -> None:
        stream(h, iter([payload[i : i + 4096] for i in range(0, len(payload), 4096)]))

    server.routes["/"] = route
    result, peak = await call_measured(f"{server.url}/")
    assert not result.ok and "larger than 100 KiB" in result.error
    assert peak < 8 << 20


async def test_a_slow_loris_body_hits_the_whole_request_deadline(servers: Servers) -> None:
    """One byte every 50 ms never trips a per-read timeout; the deadline still ends the call."""
    server = servers.start()

    def route(h: Handler) -> None:
        send_head(h, Content_Type="text/plain")
        stream(h, forever(b"."), pause=0.05)

    server.routes["/"] = route
    result, _ = await call_measured(f"{server.url}/", timeout=1)
    assert not result.ok and "timed out after 1.0s" in result.error


@pytest.mark.parametrize(
    "piece",
    [b"H", b"HTTP/1.1 100 Continue\r\n\r\n"],
    ids=["slow-status-line-and-headers", "endless-informational-responses"],
)
async def test_a_slow_or_endless_header_section_hits_the_deadline(
    servers: Servers, piece: bytes
) -> None:
    server = servers.start()
    server.routes["/"] = lambda h: stream(h, forever(piece), pause=0.05)
    result, _ = await call_measured(f"{server.url}/", timeout=1)
    assert not result.ok and "timed out after 1.0s" in result.error


async def test_a_stalled_server_hits_the_per_read_timeout(servers: Servers) -> None:
    server = servers.start()

    def route(h: Handler) -> None:
        send_head(h, Content_Type="text/plain")
        h.wfile.write(b"some")
        h.wfile.flush()
        h.server.release.wait(30)

    server.routes["/"] = route
    result, _ = await call_measured(f"{server.url}/", timeout=30, tool_kwargs={"read_timeout": 0.3})
    assert not result.ok and "the server sent nothing for 0.3s (ReadTimeout)" in result.error


async def test_a_redirect_loop_with_endless_bodies_is_bounded(servers: Servers) -> None:
    server = servers.start()
    count = [0]

    def route(h: Handler) -> None:
        count[0] += 1
        send_head(h, 302, chunked=True, Location=f"/r{count[0]}")
        stream(h, forever(b"x" * 65536), chunked=True)

    for n in range(20):
        server.routes[f"/r{n}"] = route
    result, peak = await call_measured(f"{server.url}/r0", tool_kwargs={"max_redirects": 4})
    assert not result.ok and "too many redirects: more than 4" in result.error
    assert count[0] == 5 and peak < 8 << 20

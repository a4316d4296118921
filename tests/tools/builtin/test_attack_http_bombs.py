"""Adversarial corpus for http_request, part one: decompression bombs served from 127.0.0.1
(stacked codings, single-layer gzip and deflate bombs, endless compressed streams), plus the
helpers the streams corpus (test_attack_http_streams.py) shares.

Each test asserts the attack's effect did not happen: the call ends with an error or a
truncated result, and memory stays bounded (measured with tracemalloc here, and under a hard
RLIMIT_AS of 1 GiB in a subprocess for the bombs).
"""

from __future__ import annotations

import gzip
import itertools
import json
import os
import struct
import subprocess
import sys
import textwrap
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import Handler, Servers

from jianmu_bt.tools.builtin.decoding import BodyReader, content_codings
from jianmu_bt.tools.builtin.http import HTTPRequestTool

pytestmark = pytest.mark.anyio

CAP = 200_000  # the tool's default max_response_bytes
HANG_GUARD = 60.0  # seconds; only a call that would never end gets near it
GIB = 1 << 30
REPO = Path(__file__).resolve().parents[3]


def tool(**kwargs: Any) -> HTTPRequestTool:
    return HTTPRequestTool(allowed_networks=["127.0.0.1/32"], **kwargs)


# -- building bombs cheaply ----------------------------------------------------------------


def deflate_zeros(total: int, wbits: int = 31, segment: int = 1 << 20) -> bytes:
    """A compressed stream of `total` zero bytes, built in milliseconds: after a full flush the
    compressor's output for another segment of zeros is always the same bytes, so it is repeated
    instead of recomputed. The trailer's checksum is left zero (no reader gets that far)."""
    c = zlib.compressobj(9, zlib.DEFLATED, wbits)
    zeros = bytes(segment)
    first = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    same = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    assert same == c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    end = c.flush()
    count = total // segment
    if wbits > 16:  # gzip trailer: CRC32, ISIZE
        end = end[:-8] + struct.pack("<II", 0, (count * segment) & 0xFFFFFFFF)
    elif wbits > 0:  # zlib trailer: Adler-32
        end = end[:-4] + b"\0\0\0\0"
    return first + same * (count - 2) + end


BOMB_1 = deflate_zeros(5 * GIB)  # ~5 MB on the wire, 5 GiB decoded
BOMB_2 = gzip.compress(BOMB_1, 9)  # ~12 KB
BOMB_3 = gzip.compress(BOMB_2, 9)  # ~400 bytes that expand to 5 GiB through three layers


def test_the_bombs_are_real() -> None:
    """The corpus itself: 5 GiB behind three layers of gzip, a few hundred bytes on the wire."""
    assert len(BOMB_3) < 1000 and len(BOMB_2) < 20_000 and len(BOMB_1) < 6_000_000
    assert zlib.decompress(BOMB_3, 31) == BOMB_2 and zlib.decompress(BOMB_2, 31) == BOMB_1
    inflater = zlib.decompressobj(31)
    assert inflater.decompress(BOMB_1[:100_000], 50 << 20) == bytes(50 << 20)


# -- routes of hostile servers --------------------------------------------------------------


def send_head(h: Handler, status: int = 200, chunked: bool = False, **headers: str) -> None:
    if chunked:
        h.protocol_version = "HTTP/1.1"
    h.send_response(status)
    h.send_header("Content-Type", "application/octet-stream")
    if chunked:
        h.send_header("Transfer-Encoding", "chunked")
    for name, value in headers.items():
        h.send_header(name.replace("_", "-"), value)
    h.end_headers()


def stream(h: Handler, pieces: Iterator[bytes], chunked: bool = False, pause: float = 0) -> None:
    """Write pieces until the client hangs up (or the test ends); count what was sent."""
    sent = h.server.__dict__.setdefault("sent", [0])
    try:
        for piece in pieces:
            if h.server.release.is_set():
                return
            h.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            h.wfile.flush()
            sent[0] += len(piece)
            if pause:
                time.sleep(pause)
    except OSError:
        pass  # the client hung up: what we want


def forever(piece: bytes) -> Iterator[bytes]:
    while True:
        yield piece


def serve_body(body: bytes, encoding: str, chunked: bool = False) -> Callable[[Handler], None]:
    def route(h: Handler) -> None:
        if chunked:
            send_head(h, chunked=True, Content_Encoding=encoding)
            stream(h, iter([body[i : i + 65536] for i in range(0, len(body), 65536)]), True)
        else:
            send_head(h, Content_Encoding=encoding, Content_Length=str(len(body)))
            stream(h, iter([body]))

    return route


async def call_measured(url: str, **call: Any) -> tuple[Any, int]:
    """Call the tool; the result and the peak of traced memory.

    The result says which limit ended the call; how fast it ended is not asserted. A call that
    never ends fails at HANG_GUARD seconds instead of holding the suite.
    """
    tracemalloc.start()
    try:
        with anyio.fail_after(HANG_GUARD):
            result = await tool(**call.pop("tool_kwargs", {})).call({"url": url, **call})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return result, peak


# -- decompression bombs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        ("gzip, gzip, gzip", BOMB_3),
        ("gzip, gzip", BOMB_2),
        ("gzip,gzip,gzip", BOMB_3),
        ("gzip, identity, gzip, gzip", BOMB_3),
        ("x-gzip, gzip, gzip", BOMB_3),
        ("deflate, gzip", gzip.compress(zlib.compress(bytes(10 << 20), 9))),
        ("gzip, deflate", zlib.compress(gzip.compress(bytes(10 << 20), 9), 9)),
        ("gzip, deflate, br", BOMB_3),
        ("GZIP, GZIP", BOMB_2),
    ],
)
async def test_stacked_content_codings_are_refused(
    servers: Servers, encoding: str, body: bytes
) -> None:
    server = servers.start()
    server.routes["/"] = serve_body(body, encoding)
    result, peak = await call_measured(f"{server.url}/")
    assert not result.ok
    assert "compressed" in result.error and "times over" in result.error
    assert "decodes at most one content coding" in result.error
    assert peak < 8 << 20, f"peak memory {peak} bytes"


async def test_stacked_codings_in_separate_header_lines_are_refused(servers: Servers) -> None:
    server = servers.start()

    def route(h: Handler) -> None:
        h.send_response(200)
        for coding in ("gzip", "gzip", "gzip"):
            h.send_header("Content-Encoding", coding)
        h.send_header("Content-Length", str(len(BOMB_3)))
        h.end_headers()
        h.wfile.write(BOMB_3)

    server.routes["/"] = route
    result, _ = await call_measured(f"{server.url}/")
    assert not result.ok and "compressed 3 times over" in result.error


@pytest.mark.parametrize("encoding", ["br", "zstd", "compress", "x-bomb", "gzip;q=1"])
async def test_unknown_content_codings_are_refused(servers: Servers, encoding: str) -> None:
    server = servers.start()
    server.routes["/"] = serve_body(BOMB_3, encoding)
    result, _ = await call_measured(f"{server.url}/")
    assert not result.ok and "does not decode" in result.error


@pytest.mark.parametrize(
    ("encoding", "body", "chunked"),
    [
        ("gzip", BOMB_1, False),  # one layer, 5 GiB decoded
        ("gzip", BOMB_1, True),
        ("x-gzip", BOMB_1, False),
        ("deflate", deflate_zeros(5 * GIB, wbits=15), False),  # zlib-wrapped
        ("deflate", deflate_zeros(5 * GIB, wbits=-15), True),  # raw deflate
        ("gzip", BOMB_2, False),  # three layers labelled as one: decodes to BOMB_1 (5 MB)
        ("gzip", gzip.compress(bytes(10 << 20)) * 500, False),  # 500 members, 5 GB in all
    ],
)
async def test_a_single_layer_bomb_is_cut_at_the_cap(
    servers: Servers, encoding: str, body: bytes, chunked: bool
) -> None:
    server = servers.start()
    server.routes["/"] = serve_body(body, encoding, chunked)
    result, peak = await call_measured(f"{server.url}/")
    assert result.ok and result.output["truncated"] is True
    note = result.output["note"]
    assert f"body cut at {CAP} bytes after {encoding} decoding" in note
    assert "decompression bomb" in note and "binary content" in result.output["body_note"]
    assert f"{CAP} bytes not shown" in result.output["body_note"]
    assert peak < 8 << 20, f"peak memory {peak} bytes"
    assert server.__dict__.get("sent", [0])[0] < len(body) or len(body) < 1 << 20


async def test_an_endless_gzip_stream_is_cut_at_the_cap(servers: Servers) -> None:
    """The server compresses zeros on the fly, forever (no Content-Length, chunked)."""
    server = servers.start()
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = c.compress(bytes(1 << 20)) + c.flush(zlib.Z_FULL_FLUSH)
    head = block[:10]

    def route(h: Handler) -> None:
        send_head(h, chunked=True, Content_Encoding="gzip")
        stream(h, itertools.chain([head], forever(block[10:])), chunked=True)

    server.routes["/"] = route
    result, peak = await call_measured(f"{server.url}/")
    assert (
        result.ok and result.output["truncated"] and "decompression bomb" in result.output["note"]
    )
    assert peak < 8 << 20


async def test_endless_empty_deflate_blocks_are_cut_by_the_compressed_size(
    servers: Servers,
) -> None:
    """A body that decodes to nothing at all must not stream forever either."""
    server = servers.start()
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = c.compress(b"") + c.flush(zlib.Z_SYNC_FLUSH)  # gzip header + an empty stored block
    empty_block = b"\x00\x00\x00\xff\xff"

    def route(h: Handler) -> None:
        send_head(h, chunked=True, Content_Encoding="gzip")
        stream(h, itertools.chain([head], forever(empty_block * 2000)), chunked=True)

    server.routes["/"] = route
    result, peak = await call_measured(f"{server.url}/", tool_kwargs={"max_response_bytes": 1000})
    assert result.ok and result.output["truncated"] is True
    assert (
        "gzip-compressed bytes were received and they decoded to only 0 bytes"
        in (result.output["note"])
    )
    assert result.output["body"] == "" and peak < 8 << 20


async def test_corrupt_compressed_data_is_a_clear_error(servers: Servers) -> None:
    server = servers.start()
    server.routes["/"] = serve_body(b"this is not gzip at all", "gzip")
    result, _ = await call_measured(f"{server.url}/")
    assert not result.ok and "response body is not valid gzip data" in result.error


@pytest.mark.parametrize(
    ("encoding", "encode"),
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", lambda b: zlib.compressobj(wbits=-15).compress(b) + b""),
        ("identity", lambda b: b),
        ("", lambda b: b),
        ("gzip, identity", gzip.compress),
    ],
)
async def test_honest_compressed_bodies_are_still_decoded(
    servers: Servers, encoding: str, encode: Callable[[bytes], bytes]
) -> None:
    server = servers.start()
    text = "héllo wörld, " * 1000
    body = encode(text.encode())
    if encoding == "deflate" and body[:1] != b"x":  # raw deflate: finish the stream
        c = zlib.compressobj(wbits=-15)
        body = c.compress(text.encode()) + c.flush()
    server.routes["/"] = lambda h: h.reply(200, body, Content_Encoding=encoding)
    result = await tool().call({"url": f"{server.url}/", "headers": {"Accept-Encoding": "gzip"}})
    assert result.ok and result.output["body"] == text and result.output["truncated"] is False


async def test_a_multi_member_gzip_body_is_decoded_whole(servers: Servers) -> None:
    server = servers.start()
    body = gzip.compress(b"first ") + gzip.compress(b"second") + b"\0\0trailing junk"
    server.routes["/"] = lambda h: h.reply(200, body, Content_Encoding="gzip")
    result = await tool().call({"url": f"{server.url}/"})
    assert result.ok and result.output["body"] == "first second"


def test_the_reader_never_asks_zlib_for_more_than_the_room_left() -> None:
    """Fed the 5 GiB stream in one piece, it still keeps no more than the cap."""
    reader = BodyReader(content_codings(["gzip"]), 1000)
    assert reader.feed(BOMB_1) is False
    assert reader.body() == bytes(1000) and reader.truncated


async def test_head_requests_do_not_read_a_bomb(servers: Servers) -> None:
    server = servers.start()
    server.routes["/"] = serve_body(BOMB_3, "gzip, gzip, gzip")
    result = await tool().call({"url": f"{server.url}/", "method": "HEAD"})
    assert result.ok and result.output["body"] == ""


# -- a hard memory limit --------------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    try:  # the limit is real: 1.5 GiB cannot be had
        bytearray(3 << 29)
        sys.exit("RLIMIT_AS is not enforced")
    except MemoryError:
        pass
    import anyio
    from jianmu_bt.tools.builtin.http import HTTPRequestTool

    async def main():
        tool = HTTPRequestTool(allowed_networks=["127.0.0.1/32"])
        for url in sys.argv[1:]:
            result = await tool.call({"url": url, "timeout": 20})
            out = result.output or {}
            print(json.dumps({"ok": result.ok, "error": result.error, "note": out.get("note")}))

    anyio.run(main)
    """
)


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is enforced on Linux")
def test_bombs_under_a_one_gib_address_space_limit(servers: Servers) -> None:
    """In a child process that cannot have more than 1 GiB, every bomb ends in a clean result."""
    server = servers.start()
    server.routes["/three"] = serve_body(BOMB_3, "gzip, gzip, gzip")
    server.routes["/one"] = serve_body(BOMB_1, "gzip")
    server.routes["/mislabelled"] = serve_body(BOMB_2, "gzip")
    urls = [f"{server.url}/{name}" for name in ("three", "one", "mislabelled")]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *urls], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    three, one, mislabelled = (json.loads(line) for line in done.stdout.splitlines())
    assert not three["ok"] and "compressed 3 times over" in three["error"]
    for result in (one, mislabelled):
        assert result["ok"] and "decompression bomb" in result["note"], result
    assert "MemoryError" not in done.stdout + done.stderr

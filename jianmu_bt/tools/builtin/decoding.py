"""Bounded reading of HTTP response bodies: decoding that a decompression bomb cannot blow up.

httpx decodes a compressed body one received chunk at a time but without any bound on what one
chunk expands to, layer after layer: a few hundred bytes gzip-compressed three times over become
gigabytes in memory before a size check can see them. `BodyReader` takes the raw bytes off the
wire instead and decodes them itself, asking zlib for never more than the room left under the
size cap (`decompressobj().decompress(data, max_length)`), so memory stays within the cap
whatever the body holds. It accepts one content coding at most (gzip or deflate); a stacked or
unknown coding is refused with a clear error. The compressed bytes read are capped too, so a
body that decodes to nothing (endless empty deflate blocks) cannot stream forever either.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from jianmu_bt.tools.builtin.faults import ToolFault

#: zlib `wbits` for each supported coding; deflate's is chosen from the stream's first bytes.
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
_GZIP_MAGIC = b"\x1f\x8b"


class ContentDecodingError(ToolFault):
    """A response body that is refused or cannot be decoded; the message says why."""


def content_codings(values: Iterable[str]) -> list[str]:
    """The content codings named by Content-Encoding header values, in order, identity left out."""
    codings = (part.strip().lower() for value in values for part in value.split(","))
    return [coding for coding in codings if coding and coding != "identity"]


def _is_zlib_header(head: bytes) -> bool:
    """Whether two bytes start a zlib stream (RFC 1950) rather than raw deflate data."""
    return head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0


class BodyReader:
    """Collects a response body, decoding it, up to `limit` bytes of decoded content.

    `feed` each raw chunk (as received, after chunked transfer decoding); it returns False
    once a cap is reached, and the caller stops reading. `truncated` and `note` then say so.
    At most `raw_limit` compressed bytes are taken (by default twice the cap plus 64 KiB).
    """

    def __init__(self, codings: Iterable[str], limit: int, raw_limit: int | None = None) -> None:
        self.codings = list(codings)
        self.limit = limit
        self.raw_limit = raw_limit if raw_limit is not None else 2 * limit + 65_536
        self.truncated = False
        self.note: str | None = None
        self._chunks: list[bytes] = []
        self._size = 0  # decoded bytes kept
        self._raw = 0  # bytes received
        self._inflater: zlib._Decompress | None = None
        self._head = b""  # bytes held until a stream's first two bytes are known
        self._members = 0  # compressed streams (gzip members) finished
        self._ended = False  # the compressed data ended; later bytes are ignored
        self._checked = False

    @property
    def coding(self) -> str | None:
        """The one content coding being decoded, or None for an identity body."""
        return self.codings[0] if self.codings else None

    def _check_codings(self) -> None:
        """Refuse stacked and unknown codings, once, when the first body bytes arrive."""
        self._checked = True
        shown = ", ".join(self.codings)
        if len(self.codings) > 1:
            raise ContentDecodingError(
                f"response body is compressed {len(self.codings)} times over "
                f"(Content-Encoding: {shown}); http_request decodes at most one content "
                "coding, since stacked codings are how decompression bombs are built"
            )
        if self.coding is not None and self.coding not in _WBITS:
            raise ContentDecodingError(
                f"response uses Content-Encoding '{shown}', which http_request does not decode "
                "(it decodes gzip and deflate); do not ask for it in Accept-Encoding"
            )

    def feed(self, raw: bytes) -> bool:
        """Take one raw chunk; False when a cap was reached and no more should be read."""
        if not self._checked:
            self._check_codings()
        if self.coding is None:
            return self._keep(raw)
        self._raw += len(raw)
        if not self._ended and not self._inflate(raw):
            return False
        if self._raw > self.raw_limit:
            self.truncated = True
            self.note = (
                f"body cut: more than {self.raw_limit} {self.coding}-compressed bytes were "
                f"received and they decoded to only {self._size} bytes"
            )
            return False
        return True

    def body(self) -> bytes:
        """The decoded body kept so far (at most `limit` bytes)."""
        return b"".join(self._chunks)

    # -- internals -------------------------------------------------------------------------

    def _keep(self, data: bytes) -> bool:
        """Keep decoded bytes up to the cap; False (and a note) once it is exceeded."""
        room = self.limit - self._size
        if len(data) > room:
            self._chunks.append(data[:room])
            self._size = self.limit
            self.truncated = True
            if self.coding is None:
                self.note = f"body cut at {self.limit} bytes"
            else:
                self.note = (
                    f"body cut at {self.limit} bytes after {self.coding} decoding: the decoded "
                    "body is larger than the size cap (possibly a decompression bomb)"
                )
            return False
        if data:
            self._chunks.append(data)
            self._size += len(data)
        return True

    def _start(self, data: bytes) -> bytes | None:
        """Create the inflater for the next stream (or gzip member) once its first two bytes
        are here; the bytes to inflate, or None to wait for more (or when the body ended)."""
        data = self._head + data
        if len(data) < 2:
            self._head = data
            return None
        self._head = b""
        if self._members and not data.startswith(_GZIP_MAGIC):
            self._ended = True  # bytes after the last member are ignored, as browsers do
            return None
        wbits = _WBITS[self.coding or ""]
        if wbits == zlib.MAX_WBITS and not _is_zlib_header(data):
            wbits = -zlib.MAX_WBITS  # raw deflate, as some servers send for "deflate"
        self._inflater = zlib.decompressobj(wbits)
        return data

    def _inflate(self, data: bytes) -> bool:
        """Decode `data`, never asking zlib for more than the room left plus one byte."""
        while data and not self._ended:
            if self._inflater is None:
                started = self._start(data)
                if started is None:
                    return True
                data = started
            inflater = self._inflater
            assert inflater is not None
            try:
                out = inflater.decompress(data, self.limit - self._size + 1)
            except zlib.error as exc:
                raise ContentDecodingError(
                    f"response body is not valid {self.coding} data: {exc}"
                ) from None
            if not self._keep(out):
                return False
            data = inflater.unconsumed_tail
            if inflater.eof:  # end of the stream; gzip may carry another member after it
                data = inflater.unused_data
                self._inflater = None
                self._members += 1
                self._ended = self.coding == "deflate"
        return True

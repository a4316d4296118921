"""File tools confined to a workspace: read_file, write_file, list_dir, file_info.

Every path goes through `Workspace.resolve` (containment on resolved paths) and is then used
without following links (see `jianmu_bt.tools.builtin.workspace`). Reads are bounded and say so
when they stop early: however large the file and whatever the arguments, read_file touches at
most `max_scan_bytes + max_read_bytes` bytes, counting lines in blocks (not one by one). Binary
files are detected and refused; files with more than one hard link are refused; writes are
atomic; list_dir reads at most `max_scan_entries` entries of a directory.
"""

from __future__ import annotations

import io
import itertools
import os
import stat
from datetime import UTC, datetime
from typing import Any, BinaryIO, Literal

from pydantic import Field

from jianmu_bt.tools.builtin.model_tool import ToolArguments, reports_faults
from jianmu_bt.tools.builtin.workspace import (
    BINARY_SAMPLE_BYTES,
    Workspace,
    WorkspaceError,
    WorkspaceTool,
    is_binary,
)

PathField = Field(description="File path relative to the workspace root (or absolute inside it)")
# Bytes read at a time while skipping to start_line: the first block, and the largest.
_FIRST_BLOCK = 16 * 1024
_SCAN_BLOCK = 1024 * 1024


def line_end(data: bytes, n: int) -> int:
    """The offset just past the n-th newline of `data` (n >= 1; `data` has at least n).

    Halving with `bytes.count` finds it in about two passes over `data`, in C, however short
    the lines are.
    """
    lo, hi = 0, len(data)
    while hi - lo > 256:
        mid = (lo + hi) // 2
        before = data.count(b"\n", lo, mid)
        if before >= n:
            hi = mid
        else:
            n -= before
            lo = mid
    pos = lo - 1
    for _ in range(n):
        pos = data.index(b"\n", pos + 1)
    return pos + 1


def _read_limited(handle: BinaryIO, limit: int, shown: str) -> bytes:
    """The whole file if it has at most `limit` bytes; otherwise a WorkspaceError."""
    data = handle.read(limit + 1)
    if len(data) > limit:
        raise WorkspaceError(f"'{shown}' is larger than the {limit}-byte limit for this tool")
    return data


def read_text_file(handle: BinaryIO, shown: str, limit: int) -> str:
    """A whole text file (UTF-8; undecodable bytes kept via surrogateescape); binary refused."""
    data = _read_limited(handle, limit, shown)
    if is_binary(data):
        raise WorkspaceError(f"'{shown}' looks like a binary file (it contains NUL bytes)")
    return data.decode("utf-8", errors="surrogateescape")


class ReadFileArgs(ToolArguments):
    path: str = PathField
    start_line: int = Field(1, ge=1, description="First line to return (1-based)")
    max_lines: int = Field(2000, ge=1, le=100_000, description="Most lines to return")


class ReadFileTool(WorkspaceTool):
    """Read a text file inside the workspace, optionally a range of lines."""

    name = "read_file"
    description = (
        "Read a UTF-8 text file inside the workspace. Returns the text; long files are cut at a "
        "size limit with a note saying where to continue (use start_line). Binary files are "
        "refused."
    )
    Arguments = ReadFileArgs
    primary_argument = "path"
    output_schema: dict[str, Any] = {
        "type": "string",
        "description": "The file's text, with a [truncated ...] note when it was cut",
    }
    effect_tags = ("file_read",)
    read_only = True

    def __init__(
        self,
        workspace: Workspace | str | os.PathLike[str] | None = None,
        max_read_bytes: int = 100_000,
        max_scan_bytes: int = 64 * 1024 * 1024,
        allow_hardlinks: bool = False,
    ) -> None:
        super().__init__(workspace, allow_hardlinks)
        self.max_read_bytes = max_read_bytes
        self.max_scan_bytes = max_scan_bytes

    @reports_faults
    def run(self, input: ReadFileArgs) -> str:
        resolved = self.workspace.resolve(input.path)
        shown = self.workspace.display(resolved)
        with self.workspace.open_file(resolved, self.allow_hardlinks) as handle:
            if is_binary(handle.read(BINARY_SAMPLE_BYTES)):
                size = os.fstat(handle.fileno()).st_size
                raise WorkspaceError(
                    f"'{shown}' looks like a binary file ({size} bytes, contains NUL bytes); "
                    "read_file returns text only"
                )
            handle.seek(0)
            if input.start_line > 1:
                self._skip_lines(handle, input.start_line, shown)
            return self._read_lines(handle, input.start_line, input.max_lines)

    def _skip_lines(self, handle: io.BufferedReader, start_line: int, shown: str) -> None:
        """Move past the lines before `start_line`, reading at most `max_scan_bytes` bytes in
        blocks; an error when the file has fewer lines or they lie past the scan limit."""
        need, scanned, last = start_line - 1, 0, b"\n"
        size = _FIRST_BLOCK  # small files need no megabyte buffer; big ones get one soon
        while True:
            room = self.max_scan_bytes - scanned
            block = handle.read(min(size, room)) if room > 0 else b""
            size = min(size * 4, _SCAN_BLOCK)
            if not block:
                break
            count = block.count(b"\n")
            if count >= need:
                handle.seek(scanned + line_end(block, need))
                if handle.peek(1):
                    return
                need, last = 0, b"\n"
                break
            need -= count
            scanned += len(block)
            last = block[-1:]
        if need and scanned >= self.max_scan_bytes and handle.read(1):
            raise WorkspaceError(
                f"start_line {start_line} lies beyond the first {self.max_scan_bytes} bytes of "
                f"'{shown}', which hold {start_line - 1 - need} lines; read_file scans no "
                "further than that (max_scan_bytes). Search for the text with grep_search, or "
                "read an earlier part"
            )
        lines = start_line - 1 - need + (last != b"\n")
        raise WorkspaceError(
            f"start_line {start_line} is past the end of '{shown}', which has {lines} "
            f"line{'' if lines == 1 else 's'}"
        )

    def _read_lines(self, handle: BinaryIO, start_line: int, max_lines: int) -> str:
        """At most `max_lines` lines and `max_read_bytes` bytes from the current position,
        with a note saying where to continue when the file goes on."""
        limit = self.max_read_bytes
        data = handle.read(limit + 1)
        window = data[:limit]
        note = ""
        if window.count(b"\n") >= max_lines:
            end = line_end(window, max_lines)
            out = data[:end]
            if len(data) > end:
                note = (
                    f"[truncated: showed lines {start_line}-{start_line + max_lines - 1}; the "
                    f"file goes on, call read_file with start_line={start_line + max_lines} to "
                    "read more]"
                )
        elif len(data) > limit:
            out = window
            line = start_line + window.count(b"\n")
            if line > start_line:  # the cut line can be read whole from its start
                where = f"call read_file with start_line={line} to read on"
            else:
                where = f"line {line} alone is longer than that; start_line={line + 1} skips it"
            note = f"[truncated: output limit of {limit} bytes reached in line {line}; {where}]"
        else:
            out = data
        text = out.decode("utf-8", errors="replace")
        if note:
            text += ("" if text.endswith("\n") or not text else "\n") + note
        return text


class WriteFileArgs(ToolArguments):
    path: str = PathField
    content: str = Field(description="The full text to write (UTF-8)")
    mode: Literal["overwrite", "append", "create"] = Field(
        "overwrite",
        description="overwrite: replace the file; append: add to its end; "
        "create: fail if the file already exists",
    )
    create_dirs: bool = Field(True, description="Create missing parent directories")


class WriteFileTool(WorkspaceTool):
    """Write a text file inside the workspace, atomically."""

    name = "write_file"
    description = (
        "Write text to a file inside the workspace (UTF-8). The write is atomic: the file is "
        "replaced as a whole. mode 'append' adds to the end, 'create' refuses to overwrite."
    )
    Arguments = WriteFileArgs
    output_schema: dict[str, Any] = {
        "type": "string",
        "description": "What was written, and whether the file is new",
    }
    parallel_safe = False
    effect_tags = ("file_write",)

    def __init__(
        self,
        workspace: Workspace | str | os.PathLike[str] | None = None,
        max_write_bytes: int = 10 * 1024 * 1024,
        allow_hardlinks: bool = False,
    ) -> None:
        super().__init__(workspace, allow_hardlinks)
        self.max_write_bytes = max_write_bytes

    @reports_faults
    def run(self, input: WriteFileArgs) -> str:
        resolved = self.workspace.resolve(input.path)
        shown = self.workspace.display(resolved)
        data = input.content.encode("utf-8", errors="surrogateescape")
        if input.mode != "overwrite" and resolved.exists():
            if input.mode == "create":
                raise WorkspaceError(f"'{shown}' already exists and mode is 'create'")
            with self.workspace.open_file(resolved, self.allow_hardlinks) as handle:
                data = _read_limited(handle, self.max_write_bytes, shown) + data
        if len(data) > self.max_write_bytes:
            raise WorkspaceError(
                f"refusing to write {len(data)} bytes to '{shown}': the limit is "
                f"{self.max_write_bytes} bytes"
            )
        added = len(input.content.encode("utf-8", errors="surrogateescape"))
        created = self.workspace.write_atomic(resolved, data, create_dirs=input.create_dirs)
        if created:
            return f"Wrote {added} bytes to '{shown}' (new file)"
        if input.mode == "append":
            return f"Appended {added} bytes to '{shown}' (now {len(data)} bytes)"
        return f"Wrote {added} bytes to '{shown}' (replaced the existing file)"


def _entry_type(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "other"


class ListDirArgs(ToolArguments):
    path: str = Field(".", description="Directory relative to the workspace root")
    include_hidden: bool = Field(True, description="Include names starting with '.'")
    max_entries: int = Field(200, ge=1, le=5000, description="Most entries to return")


class ListDirTool(WorkspaceTool):
    """List a directory inside the workspace."""

    name = "list_dir"
    description = (
        "List the entries of a directory inside the workspace: name, type (file, directory, "
        "symlink, other) and size of files, sorted by name."
    )
    Arguments = ListDirArgs
    primary_argument = "path"
    output_schema: dict[str, Any] = {
        "type": "object",
        "description": "The directory listing",
        "properties": {
            "path": {"type": "string"},
            "entries": {"type": "array", "items": {"type": "object"}},
            "total": {"type": "integer"},
            "truncated": {"type": "boolean"},
        },
    }
    effect_tags = ("file_read",)
    read_only = True

    def __init__(
        self,
        workspace: Workspace | str | os.PathLike[str] | None = None,
        max_scan_entries: int = 100_000,
        allow_hardlinks: bool = False,
    ) -> None:
        super().__init__(workspace, allow_hardlinks)
        self.max_scan_entries = max_scan_entries

    @reports_faults
    def run(self, input: ListDirArgs) -> dict[str, Any]:
        resolved = self.workspace.resolve_directory(input.path)
        entries: list[dict[str, Any]] = []
        total = 0
        cap = self.max_scan_entries
        with self.workspace.open_directory(resolved) as fd, os.scandir(fd) as scan:
            read = list(itertools.islice(scan, cap + 1))  # a huge directory is read only so far
            capped = len(read) > cap
            for entry in sorted(read[:cap], key=lambda e: e.name):
                if not input.include_hidden and entry.name.startswith("."):
                    continue
                total += 1
                if len(entries) >= input.max_entries:
                    continue
                info = entry.stat(follow_symlinks=False)
                item: dict[str, Any] = {"name": entry.name, "type": _entry_type(info.st_mode)}
                if stat.S_ISREG(info.st_mode):
                    item["size"] = info.st_size
                entries.append(item)
        result: dict[str, Any] = {
            "path": self.workspace.display(resolved),
            "entries": entries,
            "total": total,
            "truncated": capped or total > len(entries),
        }
        if capped:
            result["note"] = (
                f"the directory has more than {cap} entries; only the first {cap} read (in the "
                "order the file system gives them) were sorted and listed, and total counts those"
            )
        return result


class FileInfoArgs(ToolArguments):
    path: str = PathField


class FileInfoTool(WorkspaceTool):
    """Describe a file or directory inside the workspace."""

    name = "file_info"
    description = (
        "Facts about a path inside the workspace: type, size, modification time, permissions, "
        "and for files whether they are text and how many lines they have."
    )
    Arguments = FileInfoArgs
    primary_argument = "path"
    output_schema: dict[str, Any] = {
        "type": "object",
        "description": "path, type, size, modified (ISO 8601, UTC), permissions, binary, lines",
    }
    effect_tags = ("file_read",)
    read_only = True

    def __init__(
        self,
        workspace: Workspace | str | os.PathLike[str] | None = None,
        max_count_bytes: int = 16 * 1024 * 1024,
        allow_hardlinks: bool = False,
    ) -> None:
        super().__init__(workspace, allow_hardlinks)
        self.max_count_bytes = max_count_bytes

    @reports_faults
    def run(self, input: FileInfoArgs) -> dict[str, Any]:
        resolved = self.workspace.resolve(input.path)
        info = self.workspace.lstat(resolved)
        result: dict[str, Any] = {
            "path": self.workspace.display(resolved),
            "type": _entry_type(info.st_mode),
            "size": info.st_size,
            "modified": datetime.fromtimestamp(info.st_mtime, UTC).isoformat(),
            "permissions": stat.filemode(info.st_mode),
        }
        if stat.S_ISREG(info.st_mode) and info.st_nlink > 1 and not self.allow_hardlinks:
            result["hard_links"] = info.st_nlink
            result["note"] = (
                "the file has more than one hard link, so its content is not read (its other "
                "names may lie outside the workspace)"
            )
        elif stat.S_ISREG(info.st_mode):
            with self.workspace.open_file(resolved, self.allow_hardlinks) as handle:
                result["binary"] = is_binary(handle.read(BINARY_SAMPLE_BYTES))
                if not result["binary"] and info.st_size <= self.max_count_bytes:
                    handle.seek(0)
                    data = handle.read(self.max_count_bytes)
                    unterminated = bool(data) and not data.endswith(b"\n")
                    result["lines"] = data.count(b"\n") + unterminated
        return result

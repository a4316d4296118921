"""Workspace: the directory a tool set's file tools are confined to, and the containment check.

Every path an LLM gives is checked twice:

1. when it is resolved: the path is made absolute against the workspace root, resolved with
   `Path.resolve()` (which follows every symbolic link, dangling ones too) and accepted only if
   the result `is_relative_to` the resolved root. Containment is decided on path components,
   never on a string prefix, so `/ws_evil` is not inside `/ws`; a symlink that leads out is
   refused however deep it sits; NUL bytes, over-long paths and over-long names are refused
   before anything touches the disk.
2. when it is used: the file is reached from the root one directory at a time with
   `O_NOFOLLOW` (openat-style, through directory file descriptors), so a symbolic link swapped in
   between the check and the use is refused instead of followed. Writes go to a temporary file in
   the same directory and are renamed over the target, so they never write through a link and a
   reader never sees half a file.

A regular file with more than one hard link is never read (unless the tool is built with
`allow_hardlinks=True`): the other name may lie outside the workspace, and the operating system
cannot say where. Replacing such a file is safe (the rename swaps this name only). Error
messages name paths relative to the root and never show the root itself.

POSIX only (it relies on `dir_fd` support in `os.open`, `os.mkdir`, `os.replace`).
"""

from __future__ import annotations

import errno
import inspect
import io
import os
import re
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, BinaryIO

from jianmu_bt.tools.builtin.model_tool import ModelTool, ToolFault

#: Longest path text accepted (Linux PATH_MAX).
MAX_PATH_CHARS = 4096
#: Longest single file or directory name, in UTF-8 bytes (Linux NAME_MAX).
MAX_NAME_BYTES = 255
#: Bytes inspected to tell a binary file from a text file (git's heuristic: any NUL byte).
BINARY_SAMPLE_BYTES = 8192
#: What error messages say instead of the workspace root.
ROOT_NAME = "<workspace>"

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO must not wait for a writer; regular files ignore the flag.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class WorkspaceError(ToolFault):
    """A path refused or not usable inside the workspace; the message says which and why."""


def hardlink_refusal(shown: str, links: int) -> WorkspaceError:
    """The refusal of a regular file that has more than one name (hard link)."""
    return WorkspaceError(
        f"'{shown}' has {links} hard links; its other names may lie outside the workspace, so "
        "file tools refuse it (allow_hardlinks=True allows it)"
    )


def is_binary(sample: bytes) -> bool:
    """True when the leading bytes of a file look binary (contain a NUL byte)."""
    return b"\x00" in sample[:BINARY_SAMPLE_BYTES]


def open_regular_at(dir_fd: int, name: str) -> BinaryIO | None:
    """Open `name` in an open directory for binary reading if it is a regular file, else None.

    A symbolic link is not followed; a pipe or device is not opened for reading.
    """
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def check_path_text(path: str) -> None:
    """Refuse path text that no file in a workspace can have, before touching the disk."""
    if not path:
        raise WorkspaceError("path is empty; give a path relative to the workspace root")
    if "\x00" in path:
        raise WorkspaceError(f"path {path[:80]!r} contains a NUL byte, which no file name can")
    if len(path) > MAX_PATH_CHARS:
        raise WorkspaceError(f"path is {len(path)} characters long; the limit is {MAX_PATH_CHARS}")
    try:
        encoded = path.encode("utf-8")
    except UnicodeEncodeError:
        raise WorkspaceError(f"path {path[:80]!r} is not valid UTF-8 text") from None
    for part in encoded.split(b"/"):
        if len(part) > MAX_NAME_BYTES:
            raise WorkspaceError(
                f"path component {part[:40].decode(errors='replace')!r}... is {len(part)} bytes "
                f"long; a file name may have at most {MAX_NAME_BYTES}"
            )


class Workspace:
    """A resolved root directory and the checks that keep file tools inside it.

    `Workspace()` uses the current directory at construction time. The root must exist and be a
    directory; it is resolved once, so a root reached through a symlink works.
    """

    __slots__ = ("root",)

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        given = Path(os.getcwd() if root is None else root).expanduser()
        try:
            resolved = given.resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            raise ValueError(f"workspace root {str(given)!r} does not exist: {exc}") from None
        if not resolved.is_dir():
            raise ValueError(f"workspace root {str(given)!r} is not a directory")
        self.root: Path = resolved

    @classmethod
    def coerce(cls, workspace: Workspace | str | os.PathLike[str] | None) -> Workspace:
        """A Workspace from a Workspace, a path, or None (the current directory)."""
        return workspace if isinstance(workspace, Workspace) else cls(workspace)

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    # -- the containment check -------------------------------------------------------------

    def resolve(self, path: str) -> Path:
        """The resolved absolute path of `path` (relative to the root, or absolute inside it).

        Raises WorkspaceError when the path text is unusable or the path, after every symbolic
        link is followed, is not inside the root. `~` is not expanded: it is an ordinary name.
        """
        check_path_text(path)
        candidate = Path(path)
        if not candidate.is_absolute():
            candidate = self.root / candidate
        try:
            resolved = candidate.resolve()
        except RuntimeError:  # Python 3.11 raises this for a symlink loop
            raise WorkspaceError(
                f"path {self.name(path)} cannot be resolved: symbolic link loop"
            ) from None
        except OSError as exc:
            raise WorkspaceError(
                f"path {self.name(path)} cannot be resolved: {exc.strerror}"
            ) from None
        if resolved.is_relative_to(self.root):
            return resolved
        if Path(os.path.normpath(candidate)).is_relative_to(self.root):
            raise WorkspaceError(
                f"path {self.name(path)} leads outside the workspace through a symbolic link"
            )
        raise WorkspaceError(f"path {self.name(path)} is outside the workspace")

    def name(self, path: str) -> str:
        """How a path the caller gave is quoted in a message: never with the absolute root.

        An absolute path inside the root is shown relative to it; elsewhere the root (as a
        leading part of a path) is replaced by `<workspace>`.
        """
        shown = path[:200] + ("..." if len(path) > 200 else "")
        if os.path.isabs(path):
            normal = Path(os.path.normpath(path))
            if normal.is_relative_to(self.root):
                return repr(self.display(normal))
        root = re.escape(str(self.root))
        return repr(re.sub(f"{root}(?=/|$)", ROOT_NAME, shown))

    def resolve_directory(self, path: str) -> Path:
        """`resolve(path)`, and a WorkspaceError unless it names an existing directory."""
        resolved = self.resolve(path)
        if not resolved.is_dir():
            kind = "is not a directory" if resolved.exists() else "does not exist"
            raise WorkspaceError(f"'{self.display(resolved)}' {kind}")
        return resolved

    def display(self, resolved: Path) -> str:
        """`resolved` relative to the root, as the tools report it ("." for the root)."""
        relative = resolved.relative_to(self.root)
        return relative.as_posix() if relative.parts else "."

    # -- using a checked path without following links ---------------------------------------

    def _open_dir_chain(self, parts: tuple[str, ...], create: bool) -> int:
        """An fd of root/parts..., each step opened with O_NOFOLLOW; optionally creating them."""
        fd = os.open(self.root, DIR_FLAGS)
        try:
            for index, part in enumerate(parts):
                where = "/".join(parts[: index + 1])
                try:
                    child = os.open(part, DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise WorkspaceError(f"directory '{where}' does not exist") from None
                    with suppress(FileExistsError):
                        os.mkdir(part, dir_fd=fd)
                    child = os.open(part, DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise WorkspaceError(
                            f"'{where}' is not a directory (or was replaced by a symbolic link "
                            "after the path was checked)"
                        ) from None
                    raise
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def directory_fd(self, resolved: Path) -> int:
        """A raw fd of a resolved directory, reached without following any link; the caller
        closes it."""
        return self._open_dir_chain(resolved.relative_to(self.root).parts, create=False)

    @contextmanager
    def open_directory(self, resolved: Path) -> Iterator[int]:
        """A directory fd for a resolved path, reached without following any link."""
        fd = self._open_dir_chain(resolved.relative_to(self.root).parts, create=False)
        try:
            yield fd
        finally:
            os.close(fd)

    @contextmanager
    def parent_directory(self, resolved: Path, create: bool = False) -> Iterator[tuple[int, str]]:
        """(fd of the directory holding `resolved`, final name); `create` makes missing dirs."""
        parts = resolved.relative_to(self.root).parts
        if not parts:
            raise WorkspaceError("'.' is the workspace directory itself, not a file")
        fd = self._open_dir_chain(parts[:-1], create=create)
        try:
            yield fd, parts[-1]
        finally:
            os.close(fd)

    def lstat(self, resolved: Path) -> os.stat_result:
        """The status of `resolved` itself (a link is not followed)."""
        if resolved == self.root:
            return os.stat(self.root)
        with self.parent_directory(resolved) as (dir_fd, name):
            try:
                return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                raise WorkspaceError(f"'{self.display(resolved)}' does not exist") from None

    def open_file(self, resolved: Path, allow_hardlinks: bool = False) -> io.BufferedReader:
        """Open a regular file for binary reading; directories, pipes and devices are refused,
        and so is a file with more than one hard link unless `allow_hardlinks`."""
        shown = self.display(resolved)
        if resolved == self.root:
            raise WorkspaceError("'.' is the workspace directory, not a file; use list_dir")
        with self.parent_directory(resolved) as (dir_fd, name):
            try:
                fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
            except FileNotFoundError:
                raise WorkspaceError(f"file '{shown}' does not exist") from None
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise WorkspaceError(
                        f"'{shown}' was replaced by a symbolic link after the path was checked"
                    ) from None
                raise WorkspaceError(f"'{shown}' cannot be opened: {exc.strerror}") from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or (info.st_nlink > 1 and not allow_hardlinks):
            os.close(fd)
            if stat.S_ISDIR(info.st_mode):
                raise WorkspaceError(f"'{shown}' is a directory, not a file; use list_dir")
            if stat.S_ISREG(info.st_mode):
                raise hardlink_refusal(shown, info.st_nlink)
            raise WorkspaceError(f"'{shown}' is not a regular file (a pipe, socket or device)")
        return os.fdopen(fd, "rb")

    def write_atomic(self, resolved: Path, data: bytes, create_dirs: bool = True) -> bool:
        """Replace (or create) `resolved` with `data` atomically; True when the file is new.

        The bytes go to a temporary file in the same directory, are flushed to disk, and the
        temporary file is renamed over the target. An existing file keeps its permission bits.
        A file with other hard links is replaced under this name only: the other names keep the
        old content, so nothing is ever written through a link.
        """
        shown = self.display(resolved)
        with self.parent_directory(resolved, create=create_dirs) as (dir_fd, name):
            try:
                old = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                old = None
            if old is not None and stat.S_ISDIR(old.st_mode):
                raise WorkspaceError(f"'{shown}' is a directory; cannot write a file over it")
            if old is not None and not (stat.S_ISREG(old.st_mode) or stat.S_ISLNK(old.st_mode)):
                raise WorkspaceError(f"'{shown}' is not a regular file (a pipe, socket or device)")
            keep_mode = stat.S_IMODE(old.st_mode) if old and stat.S_ISREG(old.st_mode) else None
            temp = f".{name[:40]}.{secrets.token_hex(6)}.tmp"
            fd = os.open(temp, _CREATE_FLAGS, 0o666, dir_fd=dir_fd)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                    handle.flush()
                    if keep_mode is not None:
                        os.fchmod(handle.fileno(), keep_mode)
                    os.fsync(handle.fileno())
                os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                with suppress(OSError):
                    os.unlink(temp, dir_fd=dir_fd)
                raise
        return old is None


class WorkspaceTool(ModelTool):
    """A built-in tool confined to a workspace (file reading, writing and searching tools).

    `workspace` is the root directory; None means the current directory when the tool is built.
    `ToolSet.resolve(names, workspace=...)` passes it to every file tool. `allow_hardlinks`
    lets the tool read or replace regular files that have more than one hard link (refused by
    default: the other names may lie outside the workspace).
    """

    def __init__(
        self,
        workspace: Workspace | str | os.PathLike[str] | None = None,
        allow_hardlinks: bool = False,
    ) -> None:
        self.workspace = Workspace.coerce(workspace)
        self.allow_hardlinks = allow_hardlinks

    def sandbox_kwargs(self) -> dict[str, Any]:
        """Constructor arguments (JSON) that rebuild this tool in a sandbox worker.

        Every constructor parameter of a workspace tool is stored under its own name; the
        workspace travels as its root path, so the copy is confined to the same directory.
        """
        names = list(inspect.signature(type(self).__init__).parameters)[1:]
        kwargs = {name: getattr(self, name) for name in names}
        kwargs["workspace"] = str(self.workspace.root)
        return kwargs

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} in {str(self.workspace.root)!r}>"

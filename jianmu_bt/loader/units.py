"""The read and model stages: one tree file (or YAML text) read, parsed with positions and
validated against the registry's file model, kept as a `Unit` (see `records`).

`UnitLoader` loads the main source and every file a `subtree` includes, each once (by resolved
path), collecting every file's diagnostics; a file the model refuses is repaired (`repair`) so the
later stages can still check the rest of it. Only regular files are read, and at most
`MAX_FILE_BYTES` of them: `/dev/zero`, a FIFO, a directory or a symlink to one is refused
before a byte is read, without blocking (see `read_tree_file`).
"""

from __future__ import annotations

import os
import stat
from operator import itemgetter
from pathlib import Path

from pydantic import ValidationError

from jianmu_bt.loader.diagnostics import Diagnostic
from jianmu_bt.loader.positions import parse_yaml
from jianmu_bt.loader.records import Unit
from jianmu_bt.loader.registry import models
from jianmu_bt.loader.repair import Repair, repaired_model
from jianmu_bt.loader.schema_errors import validation_diagnostics

TEXT_SOURCE = "<string>"
"""The file name shown for a tree given as YAML text."""

MAX_FILE_BYTES = 8 * 1024 * 1024
"""Largest tree file read (a bigger one is almost certainly not a tree file); also the largest
YAML text `load_tree` accepts. Loosen it by assigning `units.MAX_FILE_BYTES`."""

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)  # opening a FIFO must not wait for a writer
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class UnreadableFile(OSError):
    """A tree file that is not read: not a regular file, or too large."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class LoadProblem(str):
    """Why a file could not be loaded (a plain message), with a diagnostic `code`."""

    code: str = "file-error"

    @classmethod
    def of(cls, message: str, code: str) -> LoadProblem:
        """The message `message` carrying `code`."""
        problem = cls(message)
        problem.code = code
        return problem


def read_tree_file(path: Path, limit: int | None = None) -> str:
    """The text of a regular file of at most `limit` bytes (default `MAX_FILE_BYTES`).

    The file is opened without blocking (a FIFO does not wait for a writer), checked with
    `fstat` on the open descriptor (no race with a swapped path; symlinks are followed to what
    they name) and read up to `limit + 1` bytes, so a file that grows, or a device that never
    ends, costs at most that. Raises UnreadableFile, IsADirectoryError, FileNotFoundError,
    UnicodeDecodeError or another OSError.
    """
    limit = MAX_FILE_BYTES if limit is None else limit
    shown = display_name(path)
    fd = os.open(path, _OPEN_FLAGS)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(shown)
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a file")
            raise UnreadableFile(
                f"{shown} is {kind}, not a regular file (only regular files are read as tree files)"
            )
        too_large = UnreadableFile(
            f"{shown} is larger than {limit} bytes, the limit for a tree file"
        )
        if info.st_size > limit:
            raise too_large
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(limit + 1 - size, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # it grew while being read
            raise too_large
    finally:
        os.close(fd)
    text = b"".join(chunks).decode("utf-8")
    return text.replace("\r\n", "\n").replace("\r", "\n")  # as `Path.read_text` reads it


def resolved(path: Path) -> Path:
    """`path` made absolute with its symlinks resolved as far as they go (a symlink loop does
    not raise here: opening the file reports it)."""
    return Path(os.path.realpath(path))


def display_name(path: Path) -> str:
    """A file's name in messages: relative to the working directory when it is below it."""
    try:
        return str(resolved(path).relative_to(resolved(Path.cwd())))
    except ValueError:
        return str(path)


def parse_unit(
    text: str,
    file: str,
    path: Path | None,
    base_dir: Path,
    repairs: dict[str, Repair] | None = None,
) -> tuple[Unit | None, list[Diagnostic]]:
    """Parse and validate one source; a Unit when it is valid, and its diagnostics.

    With `repairs`, a source the model refuses still gives a Unit when it can be repaired (see
    `repair`): its diagnostics then hold the model's errors, and `repairs[unit.key]` says what
    was patched, so the later stages check the rest of it.
    """
    if len(text) > MAX_FILE_BYTES:
        message = f"the text is longer than {MAX_FILE_BYTES} characters, the limit for a tree"
        return None, [Diagnostic(file, 1, 1, "error", message, "file-error")]
    data, source, problems = parse_yaml(text, file)
    if data is None and not problems:
        problems = [Diagnostic(file, 1, 1, "error", "the file is empty", "empty-file")]
    if (data is None and problems) or any(p.code != "duplicate-key" for p in problems):
        return None, problems  # the data has holes: what follows would only be noise
    if not isinstance(data, dict):
        what = type(data).__name__ if data is not None else "nothing"
        message = f"a tree file is a mapping (version, name, state, tools, root, ...), got {what}"
        return None, [*problems, Diagnostic(file, 1, 1, "error", message, "not-a-tree")]
    # Its node kinds are among its keys' last names (a set made in C: one step per key).
    file_model = models(set(map(itemgetter(-1), source.keys))).file
    repair = None
    try:
        model = file_model.model_validate(data)
    except ValidationError as exc:
        problems = [*problems, *validation_diagnostics(exc, data, source, file_model)]
        if repairs is None:
            return None, problems
        model, repair = repaired_model(data, exc, file_model, source)
        if model is None:
            return None, problems
    key = str(resolved(path)) if path is not None else f"{TEXT_SOURCE}:{id(data)}"
    unit = Unit(file, path, base_dir, source, data, model, key)
    if repair is not None and repairs is not None:
        repairs[key] = repair
    return unit, problems


def read_source(path: Path, what: str) -> tuple[str | None, LoadProblem | None]:
    """The text of the file at `path` (a `what`: "tree file", "overlay file"), or None and why
    it cannot be read (`code` `file-missing` for a file that is not there, else `file-error`)."""
    shown = display_name(path)
    try:
        return read_tree_file(path), None
    except FileNotFoundError:
        return None, LoadProblem.of(f"file not found: {shown}", "file-missing")
    except IsADirectoryError:
        article = "an" if what[:1] in "aeiou" else "a"
        return None, LoadProblem.of(f"{shown} is a directory, not {article} {what}", "file-error")
    except UnreadableFile as exc:
        return None, LoadProblem.of(exc.message, "file-error")
    except UnicodeDecodeError as exc:
        message = f"{shown} is not UTF-8 text ({exc.reason} at byte {exc.start})"
        return None, LoadProblem.of(message, "file-error")
    except OSError as exc:
        return None, LoadProblem.of(f"cannot read {shown}: {exc.strerror or exc}", "file-error")


class UnitLoader:
    """Loads files once each; remembers the ones that failed so their errors show once."""

    def __init__(self) -> None:
        self.units: dict[str, Unit | None] = {}
        self.diagnostics: list[Diagnostic] = []
        self.repairs: dict[str, Repair] = {}  # unit key -> what was patched in a refused file

    def load_file(self, path: Path) -> tuple[Unit | None, LoadProblem | None]:
        """The unit of `path`, or None and why (a reason only for a file that cannot be read;
        its `code` is `file-missing` for a file that is not there, else `file-error`)."""
        key = str(resolved(path))
        if key in self.units:
            return self.units[key], None
        shown = display_name(path)
        text, problem = read_source(path, "tree file")
        if text is None:
            return None, problem
        unit, problems = parse_unit(text, shown, path, resolved(path).parent, self.repairs)
        self.diagnostics.extend(problems)
        self.units[key] = unit
        return unit, None

    def load_text(self, text: str, file: str, base_dir: Path) -> Unit | None:
        """The unit of YAML text (its errors go to `diagnostics`)."""
        unit, problems = parse_unit(text, file, None, base_dir, self.repairs)
        self.diagnostics.extend(problems)
        if unit is not None:
            self.units[unit.key] = unit
        return unit

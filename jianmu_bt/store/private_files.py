"""Files that hold runs (their state, arguments and results) are private to their owner.

A run store and a run's trace are created readable by their owner only (0600), in folders this
program creates for them readable by their owner only (0700); existing folders and files keep
their permissions (the user chose them). A path that exists but is not a regular file (a device,
a pipe, a folder) is refused before anything opens it: SQLite would otherwise write a
`<path>-journal` file beside a device.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import TextIO

FILE_MODE = 0o600
FOLDER_MODE = 0o700


def non_regular_problem(path: Path) -> str:
    """Why `path` cannot hold a file this program writes ("" when it is a regular file or does
    not exist yet)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return f"cannot use {os.path.abspath(path)}: {exc.strerror}"
    if stat.S_ISREG(mode):
        return ""
    kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a device, pipe or socket)"
    return f"{os.path.abspath(path)} is {kind}; give the path of a file"


def private_folder(folder: Path) -> None:
    """Create `folder` and its missing parents readable by their owner only (existing ones are
    left as they are)."""
    missing = []
    current = folder
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for created in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            created.mkdir(mode=FOLDER_MODE)


def create_private_file(path: Path) -> None:
    """Create `path` empty with mode 0600 if it does not exist (its folder made private)."""
    private_folder(path.parent)
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))


def open_private(path: str | Path, mode: str = "w") -> TextIO:
    """`open(path, mode)` for text ("w" or "a"), creating the file 0600 (its folder private)."""
    path = Path(path)
    private_folder(path.parent)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if mode == "a" else os.O_TRUNC)
    descriptor = os.open(path, flags, FILE_MODE)
    if mode == "a":
        return open(descriptor, "a", encoding="utf-8")
    return open(descriptor, "w", encoding="utf-8")

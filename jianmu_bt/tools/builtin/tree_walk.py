"""Walking a directory tree inside a workspace: no symbolic link followed, the work bounded.

The search tools (glob_search, grep_search) use `walk`. Each directory is opened relative to its
parent's file descriptor with `O_NOFOLLOW`, so a directory swapped for a link during the walk is
skipped, never entered. A huge directory or a very deep tree cannot make the walk unbounded:
only the first `max_dir_entries` entries of a directory are read, and directories deeper than
`max_depth` levels are not entered (one descriptor per level is open at a time).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from jianmu_bt.tools.builtin.workspace import DIR_FLAGS, Workspace

#: Entries read from one directory at most, by default.
MAX_DIR_ENTRIES = 100_000
#: Levels below the starting directory entered at most, by default.
MAX_DEPTH = 100


def walk(
    workspace: Workspace,
    base: Path,
    descend: Callable[[str], bool] = lambda _rel: True,
    max_dir_entries: int = MAX_DIR_ENTRIES,
    max_depth: int = MAX_DEPTH,
    note: Callable[[str], None] = lambda _reason: None,
) -> Iterator[tuple[str, int, list[os.DirEntry[str]]]]:
    """Walk the tree under a resolved directory of `workspace` without following any link.

    Yields `(relative_dir, dir_fd, entries)` depth first, entries sorted by name, with
    `relative_dir` relative to `base` ("" for `base`). `dir_fd` stays open while the caller
    handles the entries (open a file with `os.open(name, ..., dir_fd=dir_fd)`). `descend` decides
    whether a subdirectory (given by its relative path) is entered.

    Only the first `max_dir_entries` entries of a directory (in the order the OS gives them) are
    read, and directories more than `max_depth` levels below `base` are not entered; `note` is
    told, in words, whenever either limit cuts the walk.
    """
    stack: list[tuple[int, str, Iterator[str]]] = []
    shown_base = workspace.display(base)

    def enter(fd: int, rel: str) -> list[os.DirEntry[str]]:
        with os.scandir(fd) as scan:
            entries = list(itertools.islice(scan, max_dir_entries + 1))
        if len(entries) > max_dir_entries:
            entries.pop()
            shown = f"{shown_base}/{rel}" if rel and shown_base != "." else rel or shown_base
            note(
                f"directory '{shown}' has more than {max_dir_entries} entries; only the "
                f"first {max_dir_entries} read were looked at"
            )
        entries.sort(key=lambda entry: entry.name)
        subdirs = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
        stack.append((fd, rel, iter(subdirs)))
        return entries

    base_fd = workspace.directory_fd(base)
    try:
        entries = enter(base_fd, "")
    except BaseException:
        os.close(base_fd)
        raise
    try:
        yield "", base_fd, entries
        while stack:
            fd, rel, pending = stack[-1]
            name = next(pending, None)
            if name is None:
                os.close(fd)
                stack.pop()
                continue
            child_rel = f"{rel}/{name}" if rel else name
            if not descend(child_rel):
                continue
            if len(stack) > max_depth:
                note(f"directories more than {max_depth} levels deep were not entered")
                continue
            try:
                child = os.open(name, DIR_FLAGS, dir_fd=fd)
            except OSError:  # vanished, unreadable, or swapped for a link: skip it
                continue
            try:
                entries = enter(child, child_rel)
            except OSError:
                os.close(child)
                continue
            yield child_rel, child, entries
    finally:
        for fd, _rel, _pending in stack:
            os.close(fd)

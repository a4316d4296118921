"""Code search confined to a workspace: glob_search (names) and grep_search (contents).

Both walk the tree with `tree_walk.walk`, which never follows a symbolic link, and both are
bounded: in results, in entries visited (and read per directory), in depth and in time.

Patterns cannot make the work unbounded either. A glob is translated to a regular expression
whose `*` runs are atomic (`(?>[^/]*?x)`), so `*a*a*a*a*a*a*a*a*c` is linear instead of
exponential in the name's length. grep_search uses the `regex` package because its matching takes
a timeout (a catastrophic pattern such as `(a|aa)+$` is stopped instead of holding the process)
and releases the GIL while it matches; it reports at most one match per line, and refuses a
pattern whose nested counted repeats (`(?:a{1000}){1000}`) would take gigabytes to compile.
Files with more than one hard link are skipped unless the tool allows them.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import regex
from pydantic import Field

from jianmu_bt.tools.builtin.model_tool import ToolArguments, ToolFault, reports_faults
from jianmu_bt.tools.builtin.search_patterns import check_regex_size, glob_regex
from jianmu_bt.tools.builtin.tree_walk import MAX_DEPTH, walk
from jianmu_bt.tools.builtin.workspace import (
    Workspace,
    WorkspaceError,
    WorkspaceTool,
    check_path_text,
    is_binary,
    open_regular_at,
)

__all__ = ["GlobSearchTool", "GrepSearchTool", "check_glob", "glob_regex"]

_WILDCARDS = frozenset("*?[")


def check_glob(pattern: str) -> list[str]:
    """The pattern's segments; refuses absolute patterns, `..` and unusable text."""
    check_path_text(pattern)
    if pattern.startswith("/"):
        raise WorkspaceError(
            f"glob pattern {pattern!r} is absolute; give it relative to the search path"
        )
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise WorkspaceError(f"glob pattern {pattern!r} may not contain '..'")
    if not parts:
        raise WorkspaceError(f"glob pattern {pattern!r} matches nothing; try '**/*'")
    return parts


class _Budget:
    """Counts visited entries and watches a deadline; says why a search stopped early, and
    collects the walk's notes about the parts it left out."""

    def __init__(self, max_entries: int, seconds: float) -> None:
        self.max_entries = max_entries
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.visited = 0
        self.stop_reason: str | None = None
        self.skipped: list[str] = []

    def note(self, reason: str) -> None:
        """Record a part of the tree the walk left out (each reason once, at most five)."""
        if reason not in self.skipped and len(self.skipped) < 5:
            self.skipped.append(reason)

    def finish(self, result: dict[str, Any], full: str | None) -> dict[str, Any]:
        """Complete a search result: whether it is `truncated` and a `note` saying why: `full`
        (the results filled up), else why the search stopped, else the parts the walk left out.
        """
        result["truncated"] = bool(full or self.stop_reason or self.skipped)
        if full:
            result["note"] = full
        elif self.stop_reason:
            result["note"] = f"search {self.stop_reason}; results are incomplete"
        if self.skipped:
            result["truncated"] = True
            result["skipped"] = list(self.skipped)
            result.setdefault("note", "the walk left parts of the tree out; see skipped")
        return result

    def spend(self) -> bool:
        """Count one entry; False (with a reason) once a limit is reached."""
        self.visited += 1
        if self.visited > self.max_entries:
            self.stop_reason = f"stopped after visiting {self.max_entries} entries"
        elif self.visited % 256 == 0 and time.monotonic() > self.deadline:
            self.stop_reason = f"stopped at the {self.seconds}s time limit"
        return self.stop_reason is None

    def remaining(self) -> float:
        """Seconds left before the deadline (a tiny positive number once it has passed)."""
        return max(self.deadline - time.monotonic(), 0.001)


class _SearchTool(WorkspaceTool):
    """What the two search tools share: limits, a `pattern` first, reading files only."""

    primary_argument = "pattern"
    effect_tags = ("file_read",)
    read_only = True

    def __init__(
        self,
        workspace: Workspace | str | os.PathLike[str] | None = None,
        max_visited: int = 100_000,
        time_limit: float = 10.0,
        max_depth: int = MAX_DEPTH,
        allow_hardlinks: bool = False,
    ) -> None:
        super().__init__(workspace, allow_hardlinks)
        self.max_visited = max_visited
        self.time_limit = time_limit
        self.max_depth = max_depth

    def _walk(
        self, base: Path, descend: Callable[[str], bool], budget: _Budget
    ) -> Iterator[tuple[str, int, list[os.DirEntry[str]]]]:
        """`tree_walk.walk` with this tool's limits; what it leaves out goes to `budget`."""
        return walk(
            self.workspace,
            base,
            descend,
            max_dir_entries=self.max_visited + 1,  # the visit budget speaks first
            max_depth=self.max_depth,
            note=budget.note,
        )

    def _shown_prefix(self, base: Path) -> str:
        """What goes before a path relative to `base` to make it workspace-relative."""
        shown = self.workspace.display(base)
        return "" if shown == "." else shown + "/"


class GlobSearchArgs(ToolArguments):
    pattern: str = Field(
        description="Glob pattern relative to path, e.g. '**/*.py', 'src/*.md', 'test_?.txt'"
    )
    path: str = Field(".", description="Directory to search, relative to the workspace root")
    include_hidden: bool = Field(
        False,
        description="Also match and enter names starting with '.' (implied if the "
        "pattern names one)",
    )
    max_results: int = Field(100, ge=1, le=1000, description="Most paths to return")


class GlobSearchTool(_SearchTool):
    """Find files and directories in the workspace whose paths match a glob pattern."""

    name = "glob_search"
    description = (
        "Find files and directories inside the workspace by glob pattern ('**' crosses "
        "directories: '**/*.py'). Returns workspace-relative paths; directories end with '/'. "
        "Symbolic links are not followed."
    )
    Arguments = GlobSearchArgs
    output_schema: dict[str, Any] = {
        "type": "object",
        "description": "matches (paths), truncated, and a note when the search stopped early",
    }

    @reports_faults
    def run(self, input: GlobSearchArgs) -> dict[str, Any]:
        parts = check_glob(input.pattern)
        hidden = input.include_hidden or any(p.startswith(".") for p in parts)
        search_base = self.workspace.resolve_directory(input.path)
        # Walk from the fixed leading directories of the pattern, not from the search path.
        fixed = 0
        while fixed < len(parts) - 1 and not _WILDCARDS & set(parts[fixed]):
            fixed += 1
        shown_base = self.workspace.display(search_base)
        leading = [shown_base] if shown_base != "." else []
        base = self.workspace.resolve("/".join([*leading, *parts[:fixed]]) or ".")
        rest = parts[fixed:]
        matcher = glob_regex("/".join(rest))
        max_depth = None if "**" in rest else len(rest) - 1
        prefix = self._shown_prefix(base)
        budget = _Budget(self.max_visited, self.time_limit)
        matches: list[str] = []
        truncated = False
        if base.is_dir():
            for rel_dir, _fd, entries in self._walk(base, _descend_rule(hidden, max_depth), budget):
                for entry in entries:
                    if (not hidden and entry.name.startswith(".")) or entry.is_symlink():
                        continue
                    if not budget.spend():
                        break
                    rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                    if matcher.match(rel):
                        if len(matches) >= input.max_results:
                            truncated = True
                            break
                        is_dir = entry.is_dir(follow_symlinks=False)
                        matches.append(prefix + rel + ("/" if is_dir else ""))
                if truncated or budget.stop_reason:
                    break
        result: dict[str, Any] = {"pattern": input.pattern, "path": shown_base}
        result["matches"] = sorted(matches)
        full = f"more than {input.max_results} matches; narrow the pattern"
        return budget.finish(result, full if truncated else None)


def _descend_rule(hidden: bool, max_depth: int | None) -> Callable[[str], bool]:
    def descend(rel: str) -> bool:
        if not hidden and rel.rsplit("/", 1)[-1].startswith("."):
            return False
        return max_depth is None or rel.count("/") < max_depth

    return descend


class GrepSearchArgs(ToolArguments):
    pattern: str = Field(
        min_length=1, max_length=1000, description="Regular expression (Python syntax)"
    )
    path: str = Field(".", description="Directory to search, relative to the workspace root")
    include: str | None = Field(
        None,
        description="Only files matching this glob: a bare name pattern ('*.py') matches file "
        "names at any depth, a pattern with '/' matches paths relative to path ('src/**/*.py')",
    )
    ignore_case: bool = Field(False, description="Match without regard to case")
    include_hidden: bool = Field(False, description="Also search names starting with '.'")
    max_results: int = Field(100, ge=1, le=1000, description="Most matching lines to return")


class GrepSearchTool(_SearchTool):
    """Search file contents in the workspace with a regular expression."""

    name = "grep_search"
    description = (
        "Search the text files inside the workspace for a regular expression. Returns matching "
        "lines as 'path:line: text'. Binary and very large files are skipped; the search is "
        "bounded in time and results."
    )
    Arguments = GrepSearchArgs
    output_schema: dict[str, Any] = {
        "type": "object",
        "description": "matches ('path:line: text'), files_searched, files_skipped, truncated",
    }

    def __init__(
        self,
        workspace: Workspace | str | os.PathLike[str] | None = None,
        max_visited: int = 100_000,
        time_limit: float = 10.0,
        max_file_bytes: int = 4 * 1024 * 1024,
        max_line_chars: int = 400,
        max_depth: int = MAX_DEPTH,
        allow_hardlinks: bool = False,
    ) -> None:
        super().__init__(workspace, max_visited, time_limit, max_depth, allow_hardlinks)
        self.max_file_bytes = max_file_bytes
        self.max_line_chars = max_line_chars

    @reports_faults
    def run(self, input: GrepSearchArgs) -> dict[str, Any]:
        flags = regex.MULTILINE | (regex.IGNORECASE if input.ignore_case else 0)
        check_regex_size(input.pattern)
        try:
            compiled = regex.compile(input.pattern, flags)
        except regex.error as exc:
            raise ToolFault(f"invalid regular expression {input.pattern!r}: {exc}") from None
        include = _include_filter(input.include)
        base = self.workspace.resolve_directory(input.path)
        prefix = self._shown_prefix(base)
        budget = _Budget(self.max_visited, self.time_limit)
        matches: list[str] = []
        searched, skipped = 0, {"binary": 0, "too_large": 0, "hard_linked": 0}
        full = False
        for rel_dir, dir_fd, entries in self._walk(
            base, _descend_rule(input.include_hidden, None), budget
        ):
            for entry in entries:
                if not input.include_hidden and entry.name.startswith("."):
                    continue
                if not budget.spend():
                    break
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                if not entry.is_file(follow_symlinks=False) or not include(rel, entry.name):
                    continue
                text = self._read_text(dir_fd, entry.name, skipped)
                if text is None:
                    continue
                searched += 1
                try:
                    full = self._grep(compiled, text, prefix + rel, matches, input, budget)
                except TimeoutError:
                    budget.stop_reason = f"stopped at the {self.time_limit}s time limit"
                if full or budget.stop_reason:
                    break
            if full or budget.stop_reason:
                break
        result: dict[str, Any] = {
            "pattern": input.pattern,
            "path": self.workspace.display(base),
            "matches": matches,
            "files_searched": searched,
            "files_skipped": skipped,
        }
        note = f"stopped at {input.max_results} matching lines; narrow the search"
        return budget.finish(result, note if full else None)

    def _read_text(self, dir_fd: int, name: str, skipped: dict[str, int]) -> str | None:
        handle = open_regular_at(dir_fd, name)
        if handle is None:
            return None
        with handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISREG(info.st_mode) and info.st_nlink > 1 and not self.allow_hardlinks:
                skipped["hard_linked"] += 1
                return None
            if info.st_size > self.max_file_bytes:
                skipped["too_large"] += 1
                return None
            data = handle.read(self.max_file_bytes + 1)
        if len(data) > self.max_file_bytes:
            skipped["too_large"] += 1
            return None
        if is_binary(data):
            skipped["binary"] += 1
            return None
        return data.decode("utf-8", errors="replace")

    def _grep(
        self,
        compiled: regex.Pattern[str],
        text: str,
        shown: str,
        matches: list[str],
        input: GrepSearchArgs,
        budget: _Budget,
    ) -> bool:
        """Append 'path:line: text' for each matching line; True once max_results is reached.

        After a match the search goes on from the next line, so a long line with a million
        matches costs one search, not a million loop turns.
        """
        line, last_pos, pos = 1, 0, 0
        while pos <= len(text):
            found = compiled.search(text, pos, timeout=budget.remaining(), concurrent=True)
            if found is None:
                return False
            line += text.count("\n", last_pos, found.start())
            last_pos = found.start()
            if len(matches) >= input.max_results:
                return True
            start = text.rfind("\n", 0, found.start()) + 1
            end = text.find("\n", found.start())
            end = len(text) if end == -1 else end
            content = text[start:end].rstrip("\r")
            if len(content) > self.max_line_chars:
                content = content[: self.max_line_chars] + "…"
            matches.append(f"{shown}:{line}: {content}")
            pos = end + 1
        return False


def _include_filter(include: str | None) -> Callable[[str, str], bool]:
    """A predicate (relative path, name) -> bool for grep's `include` glob."""
    if not include:
        return lambda _rel, _name: True
    parts = check_glob(include)
    matcher = glob_regex("/".join(parts))
    if len(parts) == 1:
        return lambda _rel, name: matcher.match(name) is not None
    return lambda rel, _name: matcher.match(rel) is not None

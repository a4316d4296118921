"""str_replace: an exact text edit of a file inside a workspace (unique unless replace_all).

Reads through the file tools' bounded text reader and writes atomically through the workspace,
so an edit never follows a link out of the workspace (symbolic or hard) or leaves a
half-written file. The edited size is computed before the text is replaced, so replacing a
million one-character matches with long text is refused instead of building gigabytes, and only
the first few matches are located by line.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import Field

from jianmu_bt.tools.builtin.files import PathField, read_text_file
from jianmu_bt.tools.builtin.model_tool import ToolArguments, reports_faults
from jianmu_bt.tools.builtin.workspace import Workspace, WorkspaceError, WorkspaceTool

# Occurrences located by line in messages.
_SHOWN_LINES = 10


class StrReplaceArgs(ToolArguments):
    path: str = PathField
    old_str: str = Field(min_length=1, description="Exact text to replace, whitespace included")
    new_str: str = Field(description="Text to put in its place")
    replace_all: bool = Field(False, description="Replace every occurrence instead of one")


class StrReplaceTool(WorkspaceTool):
    """Replace an exact piece of text in a file inside the workspace."""

    name = "str_replace"
    description = (
        "Replace old_str with new_str in a text file inside the workspace. old_str must occur "
        "exactly once (include enough surrounding text to make it unique) unless replace_all is "
        "true. The file is rewritten atomically."
    )
    Arguments = StrReplaceArgs
    output_schema: dict[str, Any] = {
        "type": "string",
        "description": "How many occurrences were replaced, and where",
    }
    parallel_safe = False
    effect_tags = ("file_read", "file_write")

    def __init__(
        self,
        workspace: Workspace | str | os.PathLike[str] | None = None,
        max_edit_bytes: int = 10 * 1024 * 1024,
        allow_hardlinks: bool = False,
    ) -> None:
        super().__init__(workspace, allow_hardlinks)
        self.max_edit_bytes = max_edit_bytes

    @reports_faults
    def run(self, input: StrReplaceArgs) -> str:
        resolved = self.workspace.resolve(input.path)
        shown = self.workspace.display(resolved)
        if input.old_str == input.new_str:
            raise WorkspaceError("old_str and new_str are identical; there is nothing to change")
        with self.workspace.open_file(resolved, self.allow_hardlinks) as handle:
            text = read_text_file(handle, shown, self.max_edit_bytes)
        count = text.count(input.old_str)
        if count == 0:
            hint = " (the file uses Windows line endings, \\r\\n)" if "\r\n" in text else ""
            raise WorkspaceError(
                f"old_str was not found in '{shown}' (0 matches){hint}; read the file and copy "
                "the exact text, whitespace and indentation included"
            )
        lines = _match_lines(text, input.old_str, _SHOWN_LINES)
        if count > 1 and not input.replace_all:
            raise WorkspaceError(
                f"old_str matches {count} times in '{shown}' (lines {_line_list(lines, count)}); "
                "include more surrounding text to make it unique, or set replace_all to true"
            )
        replaced = count if input.replace_all else 1
        # The size of the result, known before it is built (old_str never overlaps itself in
        # str.count/str.replace, so each replaced occurrence changes the size by the same amount).
        grows = _utf8_len(input.new_str) - _utf8_len(input.old_str)
        size = _utf8_len(text) + replaced * grows
        if size > self.max_edit_bytes:
            raise WorkspaceError(
                f"the edited '{shown}' would have {size} bytes; the limit is {self.max_edit_bytes}"
            )
        updated = text.replace(input.old_str, input.new_str, -1 if input.replace_all else 1)
        data = updated.encode("utf-8", errors="surrogateescape")
        self.workspace.write_atomic(resolved, data, create_dirs=False)
        noun, where = ("occurrence", "line") if replaced == 1 else ("occurrences", "lines")
        return f"Replaced {replaced} {noun} in '{shown}' ({where} {_line_list(lines, replaced)})"


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", errors="surrogateescape"))


def _match_lines(text: str, needle: str, limit: int) -> list[int]:
    """1-based line numbers where the first `limit` non-overlapping occurrences of `needle`
    start (a file with a million matches costs `limit` steps, not a million)."""
    lines: list[int] = []
    line, last, start = 1, 0, text.find(needle)
    while start != -1 and len(lines) < limit:
        line += text.count("\n", last, start)
        lines.append(line)
        last = start
        start = text.find(needle, start + len(needle))
    return lines


def _line_list(lines: list[int], total: int) -> str:
    text = ", ".join(str(n) for n in lines)
    return text + (f", ... ({total} in all)" if total > len(lines) else "")

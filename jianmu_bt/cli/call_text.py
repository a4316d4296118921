"""How a terminal desk shows a held call to the person who decides: all of it, nothing hidden.

A reviewer must never approve what they did not see. So the call's arguments are shown complete,
as indented JSON, never cut; every control character (C0, DEL, C1) and every invisible formatting
character (the bidi marks, overrides and isolates, zero-width characters, the line and paragraph
separators) is shown as an escape (`\\u202e`, `\\u001b`), so nothing in a value can move the
cursor, erase a line or reorder what the line appears to say. A newline inside a value is JSON's
`\\n`; the only line breaks are the JSON's own.

Every line of the arguments starts with a margin (`  | `), and a line wider than the terminal is
folded onto further lines marked `  + `: the terminal never wraps a value by itself, so no value
can start a line that looks like the desk's own question. The block also says why the call is held
(the guard's reason and policy) when that is known.
"""

from __future__ import annotations

import json
import shutil
import textwrap
import unicodedata
from typing import Any

#: The margin of each line of a call's arguments, and of each further line a long one folds onto.
MARGIN = "  | "
FOLDED = "  + "
#: Narrowest and usual width of the lines shown (the terminal's width when it says).
MIN_WIDTH = 40
DEFAULT_WIDTH = 100
#: Unicode categories never printed as themselves: controls, formats (bidi, zero-width), and the
#: line and paragraph separators.
HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp"})


def escape_hidden(text: str, *, keep: str = "") -> str:
    """`text` with every control and invisible formatting character shown as `\\uXXXX`
    (`\\UXXXXXXXX` beyond the BMP); characters in `keep` stay as they are."""
    return "".join(
        _escape(ch) if ch not in keep and unicodedata.category(ch) in HIDDEN else ch for ch in text
    )


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def arguments_text(arguments: Any, *, indent: int | None = 2) -> str:
    """A call's arguments as complete JSON (indented, or on one line when `indent` is None),
    with every hidden character escaped (`escape_hidden`). Never cut."""
    text = json.dumps(arguments, ensure_ascii=False, indent=indent, default=str)
    # json.dumps escapes the C0 controls inside strings, newlines too: a raw newline is the
    # indentation's own, kept; everything else hidden (DEL, C1, bidi, ...) is escaped here.
    return escape_hidden(text, keep="\n")


def why_held(reason: str = "", policy: str = "") -> str:
    """Why a call waits for a decision, in one escaped line ("" when neither is known)."""
    said = reason.strip()
    if policy:
        said = f"{said} (policy {policy})" if said else f"policy {policy}"
    return escape_hidden(said)


def held_call_text(
    tool: str,
    call_id: str,
    arguments: Any,
    *,
    reason: str = "",
    policy: str = "",
    width: int | None = None,
) -> str:
    """The block a terminal desk prints before asking about a held call: which call, why it is
    held, and its complete arguments, each line in the margin, folded to `width` columns
    (the terminal's width when None). Ends with a newline."""
    width = terminal_width() if width is None else max(width, MIN_WIDTH)
    heading = f"held: {escape_hidden(tool)} [{escape_hidden(call_id)}]"
    why = why_held(reason, policy)
    first, *rest = wrap_words(heading + (f": {why}" if why else ""), width - len(FOLDED))
    lines = [first, *(FOLDED + part for part in rest)]
    lines.extend(margin_lines(arguments_text(arguments), width))
    return "".join(line + "\n" for line in lines)


def call_line(tool: str, call_id: str, arguments: Any) -> str:
    """A call on one line, `tool({...}) [call_id]`, complete and escaped: what a desk says
    it decided without asking (`--approve all`, `none`)."""
    return f"{call_summary(tool, arguments)} [{escape_hidden(call_id)}]"


def call_summary(tool: str, arguments: Any, limit: int | None = None) -> str:
    """`tool({...})` on one line, escaped; complete, or when `limit` is given cut there with
    the cut said (`... (N more characters)`), never silently."""
    shown = arguments_text(arguments, indent=None)
    if limit is not None and len(shown) > limit:
        shown = f"{shown[:limit]}... ({len(shown) - limit} more characters)"
    return f"{escape_hidden(tool)}({shown})"


def margin_lines(text: str, width: int) -> list[str]:
    """Each line of `text` behind the margin, a line wider than `width` columns folded onto
    further lines marked as folded."""
    room = max(width - len(MARGIN), 1)
    shown = []
    for line in text.split("\n"):
        first, *rest = fold(line, room)
        shown.append(MARGIN + first)
        shown.extend(FOLDED + part for part in rest)
    return shown


def wrap_words(text: str, room: int) -> list[str]:
    """Prose (the heading, the reason) wrapped at spaces to `room` columns; a word wider than
    that is folded (`fold`)."""
    lines = textwrap.wrap(text, room, break_long_words=False, break_on_hyphens=False) or [""]
    return [piece for line in lines for piece in fold(line, room)]


def fold(line: str, room: int) -> list[str]:
    """`line` cut into pieces of at most `room` columns (a wide character counts two),
    joined again they are `line`: nothing is lost, a piece never spills onto the next line."""
    pieces: list[str] = []
    start, used = 0, 0
    for index, ch in enumerate(line):
        columns = _columns(ch)
        if used + columns > room and index > start:
            pieces.append(line[start:index])
            start, used = index, 0
        used += columns
    pieces.append(line[start:])
    return pieces


def _columns(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def terminal_width() -> int:
    """The terminal's width in columns, less one (a full line would wrap on some terminals)."""
    columns = shutil.get_terminal_size((DEFAULT_WIDTH + 1, 24)).columns
    return max(columns - 1, MIN_WIDTH)

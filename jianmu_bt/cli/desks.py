"""What the terminal's desks share: showing a peer's text safely, yes/no, answering once.

The approval desk (held tool calls) and the question desk (an MCP server's questions) print text
that comes from elsewhere: a server's message, a form's titles, a tool's arguments. A terminal
obeys the control characters in such text, so `"\\x1b[2K\\rapprove deploy(...)? [y/N] "` would
erase the line and fake a prompt. `terminal_text` shows every control character as an escape
(`\\x1b`) and cuts the text, so a peer can never write to the terminal in the desk's name.
"""

from __future__ import annotations

import re
import threading

#: Longest peer text shown in one go (a message; a form's title or description is shorter).
TEXT_CHARS = 2000
YES = ("y", "yes", "true", "1")
NO = ("n", "no", "false", "0")

# C0 (but tab and newline, handled apart), DEL, C1, the line and paragraph separators, and the
# bidirectional marks, overrides and isolates that reorder what a line appears to say.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069]")


#: What starts each further line of a peer's multi-line text: it cannot pass for a desk's line.
CONTINUED = "\n  | "


def terminal_text(text: object, limit: int = TEXT_CHARS, *, multiline: bool = False) -> str:
    """`text` made safe to print: control characters shown as escapes (`\\x1b`, `\\u202e`),
    tabs as spaces, cut to `limit` characters with `...`. Newlines become spaces, or, when
    `multiline`, stay with each further line marked (`  | `), so that a line of the peer's can
    never look like the desk's own prompt."""
    shown = _CONTROL.sub(_escape, str(text).replace("\t", " "))
    shown = shown if len(shown) <= limit else shown[: max(0, limit - 3)] + "..."
    return shown.replace("\n", CONTINUED if multiline else " ")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def is_yes(text: str) -> bool:
    """Whether a typed answer says yes (`y`, `yes`, `true`, `1`, any case)."""
    return text.strip().lower() in YES


def is_no(text: str) -> bool:
    """Whether a typed answer says no (`n`, `no`, `false`, `0`, any case)."""
    return text.strip().lower() in NO


class Once:
    """Keys seen before, thread-safe: a desk answers each held call or question once, though
    its event may be delivered again (a replay, two subscriptions)."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def first(self, key: object) -> bool:
        """True the first time a (non-empty) key is offered, False after, and for no key."""
        if not key or not isinstance(key, str):
            return False
        with self._lock:
            if key in self._seen:
                return False
            self._seen.add(key)
            return True

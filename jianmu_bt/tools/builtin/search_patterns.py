"""Patterns of the search tools, made safe to run: glob translation and regex size checks.

A glob such as `*a*a*a*a*a*a*a*a*c` translated naively (`[^/]*a[^/]*a...`) backtracks
exponentially on a name that almost matches (40 s for a 60-character name), and
`**/**/**/**/**/**/**/**/x` does the same across directories. `glob_regex` translates so that
matching takes time about proportional to the path's length: the text between two `*` of a name
is found with an atomic lazy group, `(?>[^/]*?chunk)`, and the names between two `**` with
`(?>(?:[^/]+/)*?names/)` (the first place a fixed chunk fits is always as good as any later one,
because the wildcard after it can take up the rest), and runs of `*` or of `**` collapse into one.

grep patterns run with a timeout (the `regex` package), but compiling is not timed:
`(?:a{10000}){10000}` takes gigabytes. `check_regex_size` refuses a pattern whose nested counted
repeats multiply past `MAX_REGEX_EXPANSION` before it is compiled.
"""

from __future__ import annotations

import re

from jianmu_bt.tools.builtin.faults import ToolFault

#: Largest size of a grep pattern with its counted repeats multiplied out (about 40 MB compiled).
MAX_REGEX_EXPANSION = 100_000

_STAR = None  # a `*` token of a glob segment
_QUANTIFIER = re.compile(r"\{(\d*)(,?)(\d*)\}")
_BRACED_ESCAPES = frozenset("pPNxuUgk")


def _segment_tokens(segment: str) -> list[str | None]:
    """One glob segment as tokens: regex text for one character, or _STAR for a run of `*`."""
    tokens: list[str | None] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            if not tokens or tokens[-1] is not _STAR:
                tokens.append(_STAR)
        elif char == "?":
            tokens.append("[^/]")
        elif char == "[" and (end := segment.find("]", i + 2)) != -1:
            body = segment[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            escaped = body.replace("\\", "\\\\")
            tokens.append(f"[^/{escaped}]" if negate else f"[{escaped}]")  # never a `/`
            i = end
        else:
            tokens.append(re.escape(char))
        i += 1
    return tokens


def _segment_regex(segment: str) -> str:
    """Regex text for one path segment of a glob: `*`, `?` and `[...]` never cross a `/`.

    `a*b*c*d` becomes `a(?>[^/]*?b)(?>[^/]*?c)[^/]*d`: each middle chunk is taken at its first
    fit and never revisited, so no run of stars can backtrack into another.
    """
    chunks: list[str] = [""]
    for token in _segment_tokens(segment):
        if token is _STAR:
            chunks.append("")
        else:
            chunks[-1] += token
    if len(chunks) == 1:
        return chunks[0]
    middle = "".join(f"(?>[^/]*?{chunk})" for chunk in chunks[1:-1] if chunk)
    return f"{chunks[0]}{middle}[^/]*{chunks[-1]}"


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A compiled regex that matches relative POSIX paths against a glob pattern.

    `*`, `?` and `[abc]` / `[!abc]` match within one name; a `**` segment matches any number of
    directories (`**/*.py` matches `a.py` and `x/y/a.py`).
    """
    parts: list[str] = []
    for part in pattern.split("/"):
        if not (part == "**" and parts and parts[-1] == "**"):
            parts.append(part)
    out: list[str] = []
    # Names after a `**` that another `**` follows are a chunk taken at its first fit.
    chunk: list[str] | None = None
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            if chunk is not None:
                out.append(f"(?>(?:[^/]+/)*?{''.join(chunk)})")
            if last:
                out.append(".*")
                chunk = None
            else:
                chunk = []
            continue
        text = _segment_regex(part) + ("" if last else "/")
        if chunk is None:
            out.append(text)
        elif last:  # the chunk must end the path: it is not atomic
            out.append(f"(?:[^/]+/)*{''.join(chunk)}{text}")
            chunk = None
        else:
            chunk.append(text)
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def _class_end(pattern: str, start: int) -> int:
    """The index just past the character class that opens at `start` (nested ones included)."""
    depth, i = 0, start
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            depth += 1
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":  # a leading ] is a literal
                i += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(pattern)


def regex_expansion(pattern: str) -> int:
    """An upper estimate of a regex's size with its counted repeats (`{m,n}`) multiplied out."""
    stack = [[0, 0]]  # per open group: [size so far, size of the last atom]
    i = 0
    while i < len(pattern):
        char = pattern[i]
        size, step = 1, 1
        if char == "\\":
            step = 2
            if pattern[i + 1 : i + 2] in _BRACED_ESCAPES and pattern[i + 2 : i + 3] == "{":
                step = (pattern.find("}", i) + 1 or len(pattern)) - i
        elif char == "[":
            step = _class_end(pattern, i) - i
        elif char == "(":
            stack.append([0, 0])
            i += 1
            continue
        elif char == ")" and len(stack) > 1:
            size = stack.pop()[0]
        elif char == "{" and (quantifier := _QUANTIFIER.match(pattern, i)):
            low, comma, high = quantifier.groups()
            if low or high:
                times = max(int(low or 0), int(high or 0) if high else int(low or 0) + bool(comma))
                top = stack[-1]
                top[0] += top[1] * (max(times, 1) - 1)
                top[1] *= max(times, 1)
                i = quantifier.end()
                continue
        top = stack[-1]
        top[0] += size
        top[1] = size
        i += step
    return sum(group[0] for group in stack)


def check_regex_size(pattern: str) -> None:
    """Refuse a pattern whose counted repeats would make it too large to compile."""
    size = regex_expansion(pattern)
    if size > MAX_REGEX_EXPANSION:
        raise ToolFault(
            f"the pattern's counted repeats ({{m,n}}) multiply out to about {size} elements; "
            f"the limit is {MAX_REGEX_EXPANSION}, since compiling it would take too much memory "
            "and time. Use * or + instead of large nested counts"
        )

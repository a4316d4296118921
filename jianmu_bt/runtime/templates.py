"""`{key}` references to state inside tool arguments and goal texts.

A string that is exactly one reference (`"{numbers}"`) becomes the referenced value itself, with its
type; references inside longer text are replaced by the value's text. Only names and dotted paths
into dicts are allowed (`{user.name}`), never attribute access or expressions, and `{{`/`}}` are
literal braces.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

REFERENCE = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)\}")
_WHOLE = re.compile(r"^\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)\}$")


class TemplateError(KeyError):
    """A reference to a state key (or a path inside it) that does not exist."""

    def __str__(self) -> str:
        return str(self.args[0])


def references(value: Any) -> set[str]:
    """The top-level state keys a template (string, list or dict of them) refers to."""
    found: set[str] = set()
    if isinstance(value, str):
        for match in REFERENCE.finditer(value):
            if match.group(1):
                found.add(match.group(1).split(".")[0])
    elif isinstance(value, Mapping):
        for item in value.values():
            found |= references(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            found |= references(item)
    return found


def render(value: Any, lookup: Callable[[str], Any]) -> Any:
    """Replace references in `value` (recursively through dicts and lists) using `lookup(key)`."""
    if isinstance(value, str):
        whole = _WHOLE.match(value)
        if whole:
            return _resolve(whole.group(1), lookup)

        def substitute(match: re.Match[str]) -> str:
            if match.group(0) == "{{":
                return "{"
            if match.group(0) == "}}":
                return "}"
            resolved = _resolve(match.group(1), lookup)
            if isinstance(resolved, str):
                return resolved
            return json.dumps(resolved, ensure_ascii=False, default=_text_default)

        return REFERENCE.sub(substitute, value)
    if isinstance(value, Mapping):
        return {k: render(v, lookup) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, lookup) for v in value]
    return value


def _text_default(value: Any) -> Any:
    """A value JSON lacks, in a reference's text: a set's members sorted (a set's own order
    differs between processes, and a resumed run must render the same text), else its `str()`."""
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return str(value)


def _resolve(path: str, lookup: Callable[[str], Any]) -> Any:
    head, *rest = path.split(".")
    value = lookup(head)
    for part in rest:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise TemplateError(f"'{{{path}}}': '{part}' not found in the value of '{head}'")
    return value

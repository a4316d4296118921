"""Tool names as the guard compares them: lower-cased, with the built-in aliases applied.

Every policy, the approval store and the call digest compare names through these helpers, so
`DenyList(["shell"])` also refuses a call to `bash` and a grant for `file_write` covers a call to
`write_file`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jianmu_bt.tools import Tool, ToolCall
    from jianmu_bt.tools.registry import BuiltinToolProvider


def canonical_tool_name(name: str) -> str:
    """A tool name compared the way the guard compares names: lower-cased, aliases applied."""
    return _registry().canonical_name(name)


@functools.cache
def _registry() -> type[BuiltinToolProvider]:
    # Imported on first use: the registry brings the tool layer (asyncio, anyio), which a guard
    # config read by `jianmu validate` does not need.
    from jianmu_bt.tools.registry import BuiltinToolProvider

    return BuiltinToolProvider


def call_names(call: ToolCall, tool: Tool | None) -> set[str]:
    """Every canonical name a call answers to: the name called and the resolved tool's name."""
    names = {canonical_tool_name(call.name)}
    if tool is not None:
        names.add(canonical_tool_name(tool.name))
    return names


def tool_key(call: ToolCall, tool: Tool | None) -> str:
    """The one canonical name a call's counters are kept under (the tool's, else the call's)."""
    return canonical_tool_name(tool.name if tool is not None else call.name)


def canonical_names(names: Iterable[str], owner: str) -> frozenset[str]:
    """Validate and canonicalise a list of tool names; `owner` names the policy in errors."""
    if isinstance(names, str):
        raise TypeError(f"{owner} takes a list of tool names, got the string {names!r}")
    result = set()
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"{owner}: tool names must be non-empty strings, got {name!r}")
        result.add(canonical_tool_name(name))
    return frozenset(result)

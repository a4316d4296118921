"""ArgumentPredicate: a decision based on a call's arguments, plus two ready-made predicates.

```python
ArgumentPredicate("write_file", path_outside("/srv/work"))          # DENY writes elsewhere
ArgumentPredicate("http_request", host_not_in(["api.example.com"]))  # DENY other hosts
ArgumentPredicate("bash", lambda args: "rm " in str(args), decision=Decision.CONFIRM,
                  reason="the command removes files")
```
A predicate receives the call's arguments (usually a dict; a string when the LLM's JSON could not
be decoded), or `(arguments, ctx)` if it takes two parameters. It returns a false value when the
policy has no opinion, and True or a string (the reason, shown to the LLM) when `decision` applies.
A predicate that raises is treated as firing (fail closed), with the exception in the reason.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jianmu_bt.guard.decision import Decision, GuardVerdict
from jianmu_bt.guard.names import call_names, canonical_names
from jianmu_bt.guard.policy import BasePolicy

if TYPE_CHECKING:
    from jianmu_bt.guard.context import GuardContext
    from jianmu_bt.tools import Tool, ToolCall

Predicate = Callable[..., Any]
ANY_TOOL = "*"


def _takes_context(predicate: Predicate) -> bool:
    try:
        params = inspect.signature(predicate).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


class ArgumentPredicate(BasePolicy):
    """Apply `decision` (DENY by default) to calls of `tool` whose arguments match `predicate`.

    `tool` is a name, a list of names, or "*" for every tool. `reason` is the sentence the LLM
    reads; when the predicate returns a string, that string is the reason instead.
    """

    name = "argument_predicate"

    def __init__(
        self,
        tool: str | Iterable[str],
        predicate: Predicate,
        decision: Decision = Decision.DENY,
        reason: str | None = None,
        hint: str | None = None,
        name: str | None = None,
    ) -> None:
        if not callable(predicate):
            raise TypeError(f"ArgumentPredicate needs a callable predicate, got {predicate!r}")
        decision = Decision(decision)
        if decision is Decision.ALLOW:
            raise ValueError(
                "ArgumentPredicate: decision ALLOW has no effect (the strictest verdict wins); "
                "use DENY, CONFIRM or PENDING"
            )
        tools = [tool] if isinstance(tool, str) else list(tool)
        self.any_tool = ANY_TOOL in tools
        self.tools = canonical_names([t for t in tools if t != ANY_TOOL], "ArgumentPredicate")
        self.predicate = predicate
        self.decision = decision
        self.reason = reason
        self.hint = hint
        self._with_context = _takes_context(predicate)
        if name:
            self.name = name

    def check(self, call: ToolCall, tool: Tool | None, ctx: GuardContext) -> GuardVerdict | None:
        """`decision` when the predicate fires for this call's arguments, else no opinion."""
        if not self.any_tool and self.tools.isdisjoint(call_names(call, tool)):
            return None
        try:
            if self._with_context:
                fired = self.predicate(call.arguments, ctx)
            else:
                fired = self.predicate(call.arguments)
        except Exception as exc:  # fail closed: an unreadable argument is not a safe one
            return self.verdict(
                Decision.DENY,
                call,
                f"the arguments of {call.name} could not be checked ({type(exc).__name__}: {exc})",
                hint="Check the arguments against the tool's schema and call it again.",
            )
        if not fired:
            return None
        if isinstance(fired, str):
            reason = fired
        else:
            reason = self.reason or f"the arguments of {call.name} are not accepted"
        return self.verdict(self.decision, call, reason, hint=self.hint)


def _argument(arguments: Any, keys: tuple[str, ...]) -> list[tuple[str, Any]]:
    if not isinstance(arguments, Mapping):
        return [(keys[0], arguments)] if isinstance(arguments, str) else []
    return [(key, arguments[key]) for key in keys if key in arguments]


def path_outside(root: str | os.PathLike[str], key: str | Iterable[str] = "path") -> Predicate:
    """A predicate firing when the path argument(s) `key` lie outside `root`.

    Relative paths are taken relative to `root`; `~` is expanded and symlinks resolved
    (`Path.resolve` + `is_relative_to`, so `../root_evil` and symlink escapes are caught). A
    value that is not a string or path fires too. Missing keys are left to the tool.
    """
    base = Path(root).expanduser().resolve()
    keys = (key,) if isinstance(key, str) else tuple(key)

    def outside(arguments: Any) -> str | bool:
        for name, value in _argument(arguments, keys):
            if not isinstance(value, (str, os.PathLike)):
                return f"argument '{name}' must be a path, got {type(value).__name__}"
            path = Path(value).expanduser()
            full = (path if path.is_absolute() else base / path).resolve()
            if not full.is_relative_to(base):
                return f"path {str(value)!r} is outside the allowed directory {str(base)!r}"
        return False

    return outside


def host_not_in(hosts: Iterable[str], key: str | Iterable[str] = "url") -> Predicate:
    """A predicate firing when the URL argument(s) `key` point to a host not in `hosts`.

    Hosts compare case-insensitively; `"*.example.com"` allows example.com and its subdomains.
    A URL that does not parse or has no host fires too.
    """
    if isinstance(hosts, str):
        raise TypeError(f"host_not_in takes a list of hosts, got the string {hosts!r}")
    exact = {h.lower() for h in hosts if not h.startswith("*.")}
    suffixes = tuple(h[1:].lower() for h in hosts if h.startswith("*."))
    domains = {s[1:] for s in suffixes}
    keys = (key,) if isinstance(key, str) else tuple(key)
    allowed = ", ".join(sorted(exact | {f"*{s}" for s in suffixes})) or "none"

    def not_allowed(arguments: Any) -> str | bool:
        import httpx  # its URL parser, loaded with the first check (not with the guard)

        for name, value in _argument(arguments, keys):
            try:
                host = httpx.URL(str(value)).host.lower()
            except (httpx.InvalidURL, ValueError, TypeError):
                return f"argument '{name}' is not a valid URL: {str(value)[:200]!r}"
            if not host:
                return f"URL {str(value)[:200]!r} has no host"
            if host in exact or host in domains or host.endswith(suffixes):
                continue
            return f"host {host!r} is not one of the allowed hosts ({allowed})"
        return False

    return not_allowed

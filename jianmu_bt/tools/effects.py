"""What a tool declares about its effects, and what a run makes of it. Unknown effects are effects.

A tool says what it does to the world with three attributes (`Tool`): `effect_tags` (which kinds
of effect, e.g. `("file_write",)`), `read_only` (it only observes) and `idempotent` (running the
same call twice has the effect of running it once). A tool that declares none of them may do
anything, so it is taken to have side effects:

| the tool declares  | in flight at a crash (durable run)   | the guard counts (budgets, state) |
|--------------------|--------------------------------------|-----------------------------------|
| `read_only=True`   | runs again                           | its effect tags (reads), if any   |
| `idempotent=True`  | runs again with its idempotency key  | its effect tags, else `unknown`   |
| effect tags only   | in doubt: held for a person          | its effect tags                   |
| nothing            | in doubt: held for a person          | `unknown`                         |

A read-only tool may carry only tags that observe (`read`, `*_read`, `search`, `*_search`) or say
where a call reaches (`http`, `net`, `web`, `open_world`, ...); any other tag contradicts
`read_only` and the tool is refused when it is made (`EffectDeclarationError`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

#: The effect counted for a tool that declares no effect tags and is not read-only: the guard's
#: budgets (`budgets: {unknown: 0}` admits only tools that declared what they do) and the
#: `tool_effects` state count it as they count a declared tag.
UNKNOWN_EFFECT = "unknown"

#: Effect tag of a tool that reaches the open world (the MCP `openWorldHint`).
OPEN_WORLD_TAG = "open_world"

#: Effect tags (and `_`-separated parts of tags) that say a call reaches an open world (the
#: network). They say where a call goes, not what it changes there.
OPEN_WORLD_EFFECTS = frozenset(
    {"http", "https", "net", "network", "web", "web_search", "search", "internet", OPEN_WORLD_TAG}
)

#: Tags that only say where a call reaches: a read-only tool may carry them (an HTTP GET tool
#: tagged `http`). Only whole tags count here (`web_write` is a write, though `web` is a part).
_REACH_EFFECTS = frozenset({"http", "https", "net", "network", "web", "internet", OPEN_WORLD_TAG})


class EffectDeclarationError(ValueError):
    """A tool whose declarations contradict each other (read-only, with a write effect)."""


def is_read_effect(tag: str) -> bool:
    """`read`, `search`, `*_read`, `*_search`: an effect that only observes."""
    tag = tag.lower()
    return tag in ("read", "search") or tag.endswith(("_read", "_search"))


def is_open_world_effect(tag: str) -> bool:
    """A network tag: `http`, `net`, `web_search`, or a tag with such a part (`net_fetch`)."""
    tag = tag.lower()
    return tag in OPEN_WORLD_EFFECTS or any(p in OPEN_WORLD_EFFECTS for p in tag.split("_"))


def fits_read_only(tag: str) -> bool:
    """True when a read-only tool may carry `tag`: it observes or says where a call reaches."""
    return is_read_effect(tag) or tag.lower() in _REACH_EFFECTS


def check_effects(name: str, read_only: bool, effect_tags: Iterable[str]) -> None:
    """Raise EffectDeclarationError when `read_only` contradicts one of `effect_tags`."""
    if not read_only:
        return
    wrong = [tag for tag in effect_tags if not fits_read_only(tag)]
    if wrong:
        listed = ", ".join(repr(tag) for tag in wrong)
        raise EffectDeclarationError(
            f"tool '{name}' is declared read_only=True but has effect tags that are not reads: "
            f"{listed}. A read-only tool may carry only tags that observe (`read`, `*_read`, "
            "`*_search`) or say where it reaches (`http`, `net`, `open_world`); drop "
            "read_only=True, or those tags if the tool really changes nothing"
        )


def counted_effects(tool: Any) -> tuple[str, ...]:
    """The effects the guard counts for a successful call of `tool`: its effect tags; for a tool
    with none that is not read-only, `(UNKNOWN_EFFECT,)`; for a read-only one without tags, ()."""
    tags: tuple[str, ...] = tuple(getattr(tool, "effect_tags", ()) or ())
    if tags or getattr(tool, "read_only", False):
        return tags
    return (UNKNOWN_EFFECT,)


def may_run_again(tool: Any) -> bool:
    """True when a call of `tool` may simply run again if it was in flight at a crash (its
    outcome unknown): the tool is read-only or idempotent. Effect tags do not matter: a tool
    without them has undeclared effects, not none."""
    return bool(getattr(tool, "read_only", False) or getattr(tool, "idempotent", False))

"""The parts of an overlay: a node's rule, the LLM forms, and one application's own state.

An `Overlay` keeps its rules as templates; each `apply` binds fresh copies (`Applied`): a new
`Recorded` with none of its calls used, a new scripted LLM from the same replies or function.
So one Overlay (a module-level constant shared by several tests) can be applied to many trees,
each run answered from the start of its recording and script.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jianmu_bt.testing.substitutes import Substitute, as_substitute

if TYPE_CHECKING:
    from jianmu_bt.llm import LLMProvider


@dataclass
class NodeRule:
    """What an overlay does to one node: its tool (a tool step), or its LLM and tools."""

    substitute: Substitute | None = None
    llm: LLMProvider | None = None
    tools: dict[str, Substitute] = field(default_factory=dict)

    def fresh(self) -> NodeRule:
        """This rule with fresh substitutes and a fresh scripted LLM (see `Applied`)."""
        return NodeRule(
            substitute=None if self.substitute is None else self.substitute.fresh(),
            llm=fresh_llm(self.llm),
            tools={name: sub.fresh() for name, sub in self.tools.items()},
        )


def as_llm(value: Any) -> LLMProvider:
    """An LLM provider from a provider, a list of scripted replies or a reply function.

    Replies and functions become a scripted model that each application of the overlay makes
    anew; a provider object given as it is stays the same object (its state is the caller's).
    """
    if hasattr(value, "complete") and hasattr(value, "stream"):
        provider: LLMProvider = value
        return provider
    if isinstance(value, (list, tuple)) or callable(value):
        from jianmu_bt.testing.scripted_llm import OverlayScript  # the LLM layer loads on use

        return OverlayScript(list(value) if isinstance(value, tuple) else value)
    raise TypeError(
        f"an overlay's llm is an LLMProvider, a list of scripted replies or a function "
        f"(messages, tools) -> reply, got {type(value).__name__}"
    )


def fresh_llm(provider: LLMProvider | None) -> LLMProvider | None:
    """A new scripted model from the same script, for one more application; other providers
    (and None) as they are."""
    if provider is None:
        return None
    from jianmu_bt.testing.scripted_llm import OverlayScript  # loaded with any provider anyway

    return provider.fresh() if isinstance(provider, OverlayScript) else provider


def by_lower_name(
    mapping: Mapping[str, Any], convert: Callable[[Any], Any] = as_substitute
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """`mapping` keyed by lower-case tool name (tool names are case-insensitive), and the pairs
    of names that differ only in case (the later one would replace the earlier)."""
    found: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    clashes: list[tuple[str, str]] = []
    for key, value in mapping.items():
        name = str(key)
        lower = name.lower()
        if lower in spelled:
            clashes.append((spelled[lower], name))
            continue
        spelled[lower] = name
        found[lower] = convert(value)
    return found, clashes


def clash_message(first: str, second: str) -> str:
    """The message for two tool names that differ only in case."""
    return (
        f"tools '{first}' and '{second}' differ only in case: tool names are case-insensitive, "
        "so give the substitute once"
    )


def node_rule(value: Any) -> tuple[NodeRule, list[tuple[str, str]]]:
    """A NodeRule from a substitute or a mapping `{"llm": ..., "tools": {...}}`, and its tool
    names that differ only in case."""
    if isinstance(value, NodeRule):
        return value, []
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {"llm", "tools"})
        if unknown:
            raise TypeError(
                f"a node's overlay mapping takes 'llm' and 'tools', not {', '.join(unknown)}"
            )
        llm = value.get("llm")
        tools, clashes = by_lower_name(value.get("tools") or {})
        return NodeRule(llm=None if llm is None else as_llm(llm), tools=tools), clashes
    return NodeRule(substitute=as_substitute(value)), []


@dataclass
class Applied:
    """One application of an overlay to a tree: the substitutes and LLM answering its calls."""

    tools: dict[str, Substitute]
    nodes: dict[str, NodeRule]
    llm: LLMProvider | None

    def substitutes(self) -> Iterable[tuple[str, Substitute]]:
        """Each substitute with the tool name it stands for ("" for a node's tool step)."""
        yield from self.tools.items()
        for rule in self.nodes.values():
            if rule.substitute is not None:
                yield "", rule.substitute
            yield from rule.tools.items()

    @property
    def divergences(self) -> list[str]:
        """Calls a recording did not have (each a message naming the call and the recording)."""
        return [message for _, sub in self.substitutes() for message in sub.divergences]

    def unused(self) -> list[str]:
        """Recorded tool calls that the run never made."""
        return [message for name, sub in self.substitutes() for message in sub.unused(name)]


__all__ = [
    "Applied",
    "NodeRule",
    "as_llm",
    "by_lower_name",
    "clash_message",
    "fresh_llm",
    "node_rule",
]

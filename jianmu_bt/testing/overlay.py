"""Overlay: replace tools and LLMs of a loaded tree, by tool name or by node, for a test.

```python
from jianmu_bt.loader import load_tree
from jianmu_bt.testing import Overlay, Stub

tree = load_tree("trees/agent_openai.yaml")
Overlay(
    llm=[{"tool_calls": [{"name": "calculator", "arguments": {"expression": "6*7"}}]}, "42"],
    tools={"read_file": Stub(error="no such file")},
    nodes={"Warmup": Stub(result="1024")},
).apply(tree)
```
As BehaviorTree.CPP's substitution rules replace nodes by name and pydantic-ai's TestModel and
FunctionModel replace the model, an overlay changes what a tree's steps do without changing the
tree: the nodes, their order, the state, the guard and the events stay the same.

- `tools`: tool name -> substitute (see `substitutes`): every node using that tool gets it.
- `llm`: the model of every LLM turn of the tree (the tree's and each agent's own): an
  `LLMProvider`, a list of scripted replies, or a function `(messages, tools) -> reply`
  (`ScriptedProvider`'s forms).
- `nodes`: node id, name or glob pattern -> a substitute (a tool step's tool), or a mapping
  `{"llm": ..., "tools": {...}}` for an agent, `llm` or `executor` node only. A node's own rule
  beats a tool-name rule.

Names the tree does not have are errors (`OverlayError`, all at once, with did-you-mean), except
tool names when the tree has tool providers (MCP servers): those tools are known only once the
providers start, and are substituted then.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from jianmu_bt.loader.diagnostics import Diagnostic, TreeLoadError
from jianmu_bt.loader.node_info import NodeInfo, node_info
from jianmu_bt.testing.overlay_rules import (
    Applied,
    NodeRule,
    as_llm,
    by_lower_name,
    clash_message,
    fresh_llm,
    node_rule,
)
from jianmu_bt.testing.substitutes import Substitute, SubstituteTool
from jianmu_bt.tools import Tool, ToolSet
from jianmu_bt.tools.references import did_you_mean

if TYPE_CHECKING:
    import py_trees

    from jianmu_bt.loader.tree import Tree

PYTHON_OVERLAY = "<overlay>"
"""The file name shown for problems of an overlay built in Python."""

_TOOL_KINDS = ("tool",)
_MODEL_KINDS = ("agent", "llm", "executor")
_APPLIED = "_jianmu_overlay_rebinds"
_INNER = "_jianmu_overlay_inner"


class OverlayError(TreeLoadError):
    """An overlay that does not fit its tree (or a broken overlay file): every problem, located."""


Where = tuple[str, int, int]
"""An overlay rule's place: its file, line and column (1-based)."""


class Overlay:
    """Substitutions for a loaded tree's tools and LLMs (see the module docstring).

    `where` gives each rule's place in an overlay file (`("tools", name)`, `("nodes", key)`,
    `("llm",)`) for located messages; `load_overlay` fills it. Tool names are case-insensitive:
    two that differ only in case are an OverlayError.

    The rules are templates: each `apply` binds fresh ones (`Applied`: recordings with no call
    used, a scripted LLM from its first reply), so one Overlay serves many trees and runs. A
    provider object given as `llm` is used as it is by every application.
    """

    def __init__(
        self,
        tools: Mapping[str, Any] | None = None,
        llm: Any = None,
        nodes: Mapping[str, Any] | None = None,
        *,
        where: Mapping[tuple[str, ...], Where] | None = None,
        name: str = PYTHON_OVERLAY,
    ) -> None:
        self.where = dict(where or {})
        self.name = name
        self.tools, clashes = by_lower_name(tools or {})
        problems = [self._clash(("tools",), pair) for pair in clashes]
        self.llm = None if llm is None else as_llm(llm)
        self.nodes: dict[str, NodeRule] = {}
        for key, value in (nodes or {}).items():
            self.nodes[str(key)], clashes = node_rule(value)
            problems += [self._clash(("nodes", str(key)), pair) for pair in clashes]
        if problems:
            raise OverlayError(problems)
        self._last: Applied | None = None
        self._applications: WeakKeyDictionary[Tree, Applied] = WeakKeyDictionary()

    def _clash(self, rule: tuple[str, ...], pair: tuple[str, str]) -> Diagnostic:
        return self._problem(rule, clash_message(*pair), "overlay-duplicate-tool")

    # -- what the replay saw ---------------------------------------------------------------

    def _fresh(self) -> Applied:
        return Applied(
            tools={name: sub.fresh() for name, sub in self.tools.items()},
            nodes={key: rule.fresh() for key, rule in self.nodes.items()},
            llm=fresh_llm(self.llm),
        )

    def applied(self, tree: Tree | None = None) -> Applied:
        """What answers `tree`'s calls (default: the tree this overlay was applied to last):
        its substitutes, recordings and LLM, with their divergences and unused calls."""
        found = self._last if tree is None else self._applications.get(tree)
        return found if found is not None else self._fresh()

    @property
    def divergences(self) -> list[str]:
        """Calls a recording did not have, in the tree applied to last (each a message naming
        the call and the recording)."""
        return self.applied().divergences

    def unused(self, tree: Tree | None = None) -> list[str]:
        """Recorded tool calls that the run of `tree` (default: the last applied) never made."""
        return self.applied(tree).unused()

    def assert_replayed(self, *, complete: bool = False, tree: Tree | None = None) -> None:
        """AssertionError listing the divergences (and, with `complete`, unused recordings) of
        `tree`'s run (default: the tree applied to last)."""
        applied = self.applied(tree)
        problems = applied.divergences + (applied.unused() if complete else [])
        if problems:
            raise AssertionError("the run did not follow its overlay:\n  " + "\n  ".join(problems))

    # -- applying --------------------------------------------------------------------------

    def _problem(self, rule: tuple[str, ...], message: str, code: str) -> Diagnostic:
        file, line, col = self.where.get(rule, (self.name, 1, 1))
        return Diagnostic(file, line, col, "error", message, code)

    def check(self, tree: Tree) -> list[Diagnostic]:
        """Every rule that names something `tree` does not have, or a node of the wrong kind."""
        infos = _infos(tree)
        problems = [p for key in self.nodes for p in self._check_node(key, infos)]
        if not tree.providers.needed:
            known = _tool_names(tree)
            for name in self.tools:
                if name not in known:
                    problems.append(
                        self._problem(
                            ("tools", name),
                            f"the tree has no tool '{name}'{did_you_mean(name, known)}; "
                            f"its tools: {', '.join(sorted(known)) or '(none)'}",
                            "overlay-unknown-tool",
                        )
                    )
        return problems

    def _check_node(self, key: str, infos: list[NodeInfo]) -> list[Diagnostic]:
        rule = self.nodes[key]
        matched = _match(key, infos)
        if not matched:
            names = [i.id for i in infos] + [i.name for i in infos if i.part is None]
            return [
                self._problem(
                    ("nodes", key),
                    f"the tree has no node '{key}'{did_you_mean(key, dict.fromkeys(names))} "
                    "(a node is named by its id, its name or a glob pattern of either)",
                    "overlay-unknown-node",
                )
            ]
        problems = []
        for info in matched:
            if rule.substitute is not None and info.kind not in _TOOL_KINDS:
                message = (
                    f"node '{key}' is a{_article(info.kind)} {info.kind} node: only a tool step "
                    "takes a substitute (result, error, calls, function); give an agent, llm or "
                    "executor node `llm:` and/or `tools:`"
                )
            elif rule.substitute is None and info.kind not in _MODEL_KINDS:
                message = (
                    f"node '{key}' is a{_article(info.kind)} {info.kind} node: `llm:` and `tools:`"
                    " are for agent, llm and executor nodes; a tool step takes a substitute"
                )
            elif rule.llm is not None and info.kind == "executor":
                message = f"node '{key}' is an executor: it has tools, not an LLM"
            else:
                continue
            problems.append(self._problem(("nodes", key), message, "overlay-node-kind"))
            break
        return problems

    def apply(self, tree: Tree) -> Tree:
        """Substitute in `tree` (in place) and return it; OverlayError when a rule does not fit.

        Apply it before the run starts; each application binds fresh substitutes and a fresh
        scripted LLM (see `applied`). A tree with tool providers gets the substitutes again
        each time the providers start and hand the nodes their tools.
        """
        problems = self.check(tree)
        if problems:
            raise OverlayError(problems)
        bound = self._fresh()
        self._last = self._applications[tree] = bound
        self._substitute(tree, bound)
        if bound.llm is not None:
            tree.runner.context.services["llm"] = bound.llm
        catalog = tree.providers.catalog
        for table in (catalog.tools, catalog.python):
            for key, tool in list(table.items()):
                substitute = bound.tools.get(tool.name.lower())
                if substitute is not None:
                    table[key] = SubstituteTool(tool, substitute)
        self._rebind_after_providers(tree, bound)
        return tree

    def _substitute(self, tree: Tree, bound: Applied) -> None:
        rules = _rules_by_node(bound.nodes, _infos(tree))
        for behaviour in tree.root.iterate():
            info = node_info(behaviour)
            rule = None
            if info is not None:
                rule = rules.get(info.id) or (rules.get(info.group) if info.group else None)
            _substitute_node(behaviour, rule, bound)

    def _rebind_after_providers(self, tree: Tree, bound: Applied) -> None:
        """A binding gives a node its tools when the providers start: substitute again after
        each, and once the last has been applied, check the tool names the overlay gives."""
        bindings = tree.providers.bindings
        last = bindings[-1] if bindings else None
        for binding in bindings:
            apply = binding.apply
            if getattr(apply, _APPLIED, None) is self:  # this overlay's earlier application
                apply = getattr(apply, _INNER)

            def rebind(
                tools: ToolSet, apply: Callable[[ToolSet], None] = apply, binding: Any = binding
            ) -> None:
                apply(tools)
                self._substitute(tree, bound)
                if binding is last:  # the last binding of this start
                    self._check_provider_tools(tree)

            setattr(rebind, _APPLIED, self)
            setattr(rebind, _INNER, apply)
            binding.apply = rebind

    def _check_provider_tools(self, tree: Tree) -> None:
        """ValueError (the start fails with it) for tool names no node has once providers run."""
        known = _tool_names(tree)
        unknown = [name for name in self.tools if name not in known]
        if unknown:
            name = unknown[0]
            file, line, col = self.where.get(("tools", name), (self.name, 1, 1))
            raise ValueError(
                f"{file}:{line}:{col}: the tree has no tool '{name}'"
                f"{did_you_mean(name, known)}; its tools: {', '.join(sorted(known))}"
            )

    def __repr__(self) -> str:
        return (
            f"Overlay(tools={sorted(self.tools)}, nodes={sorted(self.nodes)}, "
            f"llm={'yes' if self.llm is not None else 'no'})"
        )


def _rules_by_node(nodes: Mapping[str, NodeRule], infos: list[NodeInfo]) -> dict[str, NodeRule]:
    found: dict[str, NodeRule] = {}
    for key, rule in nodes.items():
        for info in _match(key, infos):
            found.setdefault(info.id, rule)  # an earlier, more specific key wins
    return found


def _substitute_node(
    node: py_trees.behaviour.Behaviour, rule: NodeRule | None, bound: Applied
) -> None:
    from jianmu_bt.nodes.llm_node import AgentLLMNode
    from jianmu_bt.nodes.tool_executor import ToolExecutor
    from jianmu_bt.nodes.tool_node import ToolNode

    if isinstance(node, ToolNode):
        substitute = rule.substitute if rule is not None else None
        node.tool = _wrapped(node.tool, substitute, {}, bound)
    elif isinstance(node, (ToolExecutor, AgentLLMNode)):
        own = rule.tools if rule is not None else {}
        tools = [_wrapped(tool, None, own, bound) for tool in node.toolset]
        node.toolset = ToolSet.from_tools(tools, runner=node.toolset.runner)
        if isinstance(node, AgentLLMNode):
            llm = rule.llm if rule is not None else None
            if llm is not None:
                node.provider = llm
            elif bound.llm is not None and node.provider is not None:
                node.provider = bound.llm  # an agent's own model is replaced too


def _wrapped(
    tool: Tool, substitute: Substitute | None, own: Mapping[str, Substitute], bound: Applied
) -> Tool:
    name = tool.name.lower()
    substitute = substitute or own.get(name) or bound.tools.get(name)
    if substitute is None:
        return tool
    if isinstance(tool, SubstituteTool) and tool.substitute is substitute:
        return tool  # applied already (a provider start re-applies)
    return SubstituteTool(tool, substitute)


def _article(kind: str) -> str:
    return "n" if kind[:1] in "aeiou" else ""


def _infos(tree: Tree) -> list[NodeInfo]:
    found = (node_info(b) for b in tree.nodes.values())
    return [info for info in found if info is not None]


def _match(key: str, infos: list[NodeInfo]) -> list[NodeInfo]:
    """The nodes `key` names: by id, else by name (not agent parts), else as a glob pattern."""
    by_id = [i for i in infos if i.id == key]
    if by_id:
        return by_id
    by_name = [i for i in infos if i.name == key and i.part is None]
    if by_name or not any(c in key for c in "*?["):
        return by_name
    return [
        i
        for i in infos
        if fnmatch.fnmatchcase(i.id, key) or (i.part is None and fnmatch.fnmatchcase(i.name, key))
    ]


def _tool_names(tree: Tree) -> set[str]:
    """Every tool name the tree's nodes use, and its catalog's."""
    from jianmu_bt.nodes.llm_node import AgentLLMNode
    from jianmu_bt.nodes.tool_executor import ToolExecutor
    from jianmu_bt.nodes.tool_node import ToolNode

    names = {name.lower() for name in tree.providers.catalog.names()}
    for node in tree.root.iterate():
        if isinstance(node, ToolNode):
            names.add(node.tool.name.lower())
        elif isinstance(node, (ToolExecutor, AgentLLMNode)):
            names.update(name.lower() for name in node.toolset.names())
    return names


__all__ = ["Applied", "NodeRule", "Overlay", "OverlayError", "as_llm"]

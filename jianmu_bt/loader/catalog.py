"""ToolCatalog: every tool a tree can use, found by name, alias or `module:attr`.

The catalog is what the tool stage (`tools_config`) produces and what the later stages use: the
analysis asks it whether a node's tool exists (and why not), the builders take their tools from
it, and the providers it lists (MCP servers) add more tools when the tree starts. `import_tools`
turns a `module:attr` reference (resolved by `jianmu_bt.tools.references`, with the tree files'
folders on the search path) into tools.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jianmu_bt.tools import (
    BuiltinToolProvider,
    Tool,
    ToolConfigurationError,
    ToolProvider,
    ToolSet,
    ToolUnavailableError,
)
from jianmu_bt.tools.references import ReferenceProblem, did_you_mean, resolve_reference


class ImportProblem(Exception):
    """A `module:attr` reference that does not give a tool (the message says why)."""


def import_tools(
    spec: str, search_paths: Iterable[Path], args: Mapping[str, Any]
) -> list[Tool | ToolProvider]:
    """The tools (or providers) `spec` names: a Tool, a list of them, a ToolProvider, or a Tool
    class or factory called with `args`. ImportProblem when it names nothing of the kind."""
    try:
        value = resolve_reference(spec, search_paths)
    except ReferenceProblem as exc:
        raise ImportProblem(str(exc)) from None
    return _as_tools(value, spec, args)


def _as_tools(value: Any, spec: str, args: Mapping[str, Any]) -> list[Tool | ToolProvider]:
    if isinstance(value, Tool):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, (Tool, ToolProvider)) for v in value):
        return list(value)
    if not inspect.isclass(value) and isinstance(value, ToolProvider):
        return [value]
    if callable(value):
        try:
            made = value(**args)
        except Exception as exc:
            raise ImportProblem(f"calling '{spec}' failed: {type(exc).__name__}: {exc}") from None
        if made is value or (callable(made) and not isinstance(made, (Tool, ToolProvider))):
            raise ImportProblem(f"'{spec}' did not give a tool (got {type(made).__name__})")
        return _as_tools(made, spec, {})
    raise ImportProblem(
        f"'{spec}' is a {type(value).__name__}, not a Tool, a Tool class, a factory of tools "
        "or a ToolProvider"
    )


@dataclass
class ToolCatalog:
    """Every tool the tree can use now, and the providers that add more when they start."""

    tools: dict[str, Tool] = field(default_factory=dict)
    python: dict[str, Tool] = field(default_factory=dict)
    providers: list[ToolProvider] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    #: Where a `tools:` entry reported its tool unavailable: (file, line), by the same key.
    reported_at: dict[str, tuple[str, int]] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    imported: dict[str, Tool] = field(default_factory=dict)
    base_dirs: list[Path] = field(default_factory=list)
    #: LLM clients the entries made (an agent tool's own `llm:`): the tree closes them.
    owned_llms: list[Any] = field(default_factory=list)

    def get(self, name: str) -> Tool | None:
        """A tool by name, alias or 'module:attr': Python tools, file tools, then a built-in."""
        if ":" in name:
            return self._imported(name)
        for key in (name.lower(), BuiltinToolProvider.canonical_name(name)):
            found = self.python.get(key) or self.tools.get(key)
            if found is not None:
                return found
        key = BuiltinToolProvider.canonical_name(name)
        if key in BuiltinToolProvider.list_builtin_names() and key not in self.unavailable:
            try:
                built = BuiltinToolProvider.build(key, self.options)
            except (ToolUnavailableError, ToolConfigurationError) as exc:
                # only this tool is out (a missing package, options it refuses): say why
                self.unavailable[key] = str(exc)
                return None
            self.tools[key] = built
            return built
        return None

    def _imported(self, spec: str) -> Tool | None:
        if spec in self.imported or spec in self.unavailable:
            return self.imported.get(spec)
        try:
            found = import_tools(spec, self.base_dirs, {})
        except ImportProblem as exc:
            self.unavailable[spec] = str(exc)
            return None
        tools = [t for t in found if isinstance(t, Tool)]
        if len(tools) != 1:
            self.unavailable[spec] = f"'{spec}' gives {len(tools)} tools; a tool step needs one"
            return None
        self.imported[spec] = tools[0]
        self.tools.setdefault(tools[0].name.lower(), tools[0])
        return tools[0]

    def why_missing(self, name: str, file: str | None = None) -> str:
        """Why `name` is not a tool here (unavailable built-in, or unknown with suggestions).

        A tool whose `tools:` entry already said why is pointed at that entry (`file` is where
        the asking step is, to name the entry's file only when it is another)."""
        for key in (name, BuiltinToolProvider.canonical_name(name)):
            if key not in self.unavailable:
                continue
            entry = self.reported_at.get(key)
            if entry is None:
                return self.unavailable[key]
            place = f"line {entry[1]}" if entry[0] == file else f"{entry[0]}:{entry[1]}"
            return f"tool '{name}' is unavailable (see {place})"
        known = [*self.names(), *BuiltinToolProvider.list_builtin_names()]
        return f"unknown tool '{name}'{did_you_mean(name, dict.fromkeys(known))}"

    def names(self) -> list[str]:
        """Names of the tools known now."""
        return [t.name for t in self.toolset()]

    def toolset(self) -> ToolSet:
        """All tools known now (Python tools win over same-named file tools)."""
        return ToolSet.from_tools([*self.tools.values(), *self.python.values()])

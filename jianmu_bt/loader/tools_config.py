"""The tools of a tree: `tools:` entries of every file, Python tools passed in, and providers.

| entry                                   | gives                                                 |
|-----------------------------------------|-------------------------------------------------------|
| `calculator`, `file_read` (an alias)    | the built-in, built with the file's `tool_options`    |
| `"my_pkg.tools:word_count"`             | a Tool, Tool class, factory or ToolProvider by path   |
| `{builtin: read_file, options: {...}}`  | a built-in with its own options                       |
| `{python: "pkg.mod:make", args: {...}}` | a factory called with `args`                          |
| `{mcp: {command: ..., prefix: ...}}`    | the tools of an MCP server (known once it started)    |

Tools passed to `load_tree(tools=...)` beat file tools and built-ins of the same name. A tree
node may also name a built-in that no `tools:` entry lists; it is built on demand. Import paths
are resolved with the tree file's folder on `sys.path`, so a `tools.py` next to the tree works.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jianmu_bt.loader.diagnostics import Diagnostic, did_you_mean
from jianmu_bt.loader.model import BuiltinToolEntry, MCPToolEntry, PythonToolEntry
from jianmu_bt.loader.units import Unit
from jianmu_bt.tools import (
    BuiltinToolProvider,
    Tool,
    ToolProvider,
    ToolSet,
    ToolUnavailableError,
    UnknownToolError,
)


class ImportProblem(Exception):
    """An import path that does not give a tool (the message says why)."""


@dataclass
class ToolCatalog:
    """Every tool the tree can use now, and the providers that add more when they start."""

    tools: dict[str, Tool] = field(default_factory=dict)
    python: dict[str, Tool] = field(default_factory=dict)
    providers: list[ToolProvider] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    imported: dict[str, Tool] = field(default_factory=dict)
    base_dirs: list[Path] = field(default_factory=list)

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
            except ToolUnavailableError as exc:
                self.unavailable[key] = str(exc)
                return None
            self.tools[key] = built
            return built
        return None

    def _imported(self, spec: str) -> Tool | None:
        if spec in self.imported or spec in self.unavailable:
            return self.imported.get(spec)
        try:
            found = _as_tools(_import(spec, self.base_dirs), spec, {})
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

    def why_missing(self, name: str) -> str:
        """Why `name` is not a tool here (unavailable built-in, or unknown with suggestions)."""
        if name in self.unavailable:
            return self.unavailable[name]
        key = BuiltinToolProvider.canonical_name(name)
        if key in self.unavailable:
            return self.unavailable[key]
        known = [*self.names(), *BuiltinToolProvider.list_builtin_names()]
        return f"unknown tool '{name}'{did_you_mean(name, dict.fromkeys(known))}"

    def names(self) -> list[str]:
        """Names of the tools known now."""
        return [t.name for t in self.toolset()]

    def toolset(self) -> ToolSet:
        """All tools known now (Python tools win over same-named file tools)."""
        return ToolSet.from_tools([*self.tools.values(), *self.python.values()])


def _import(spec: str, base_dirs: Iterable[Path]) -> Any:
    module_name, _, attr = spec.partition(":")
    added = [str(d) for d in base_dirs if str(d) not in sys.path]
    sys.path[:0] = added
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ImportProblem(f"cannot import '{spec}': {exc}") from None
    except Exception as exc:  # a module that fails while importing: report, do not crash
        raise ImportProblem(
            f"cannot import '{spec}': the module raised {type(exc).__name__}: {exc}"
        ) from None
    finally:
        for entry in added:
            if entry in sys.path:
                sys.path.remove(entry)
    value: Any = module
    for part in attr.split("."):
        if not hasattr(value, part):
            names = [n for n in dir(value) if not n.startswith("_")]
            raise ImportProblem(
                f"'{module_name}' has no attribute '{part}'{did_you_mean(part, names)}"
            )
        value = getattr(value, part)
    return value


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


def resolve_tools(
    units: list[Unit],
    python_tools: Iterable[Tool] | ToolSet | None,
    providers: Iterable[ToolProvider] | None,
) -> tuple[ToolCatalog, list[Diagnostic]]:
    """The tree's tool catalog from every file's `tools:` entries, and the problems found."""
    base_dirs = list(dict.fromkeys(u.base_dir for u in units))
    catalog = ToolCatalog(
        options=dict(units[0].model.tool_options) if units else {}, base_dirs=base_dirs
    )
    problems: list[Diagnostic] = []
    for item in python_tools or ():
        if not isinstance(item, Tool):
            raise TypeError(f"tools= takes Tool instances (or a ToolSet), got {item!r}")
        catalog.python[item.name.lower()] = item
    for provider in providers or ():
        # A provider that already offers tools was started by the caller, who also closes it;
        # one that offers none yet is started before the first tick and closed after the run.
        try:
            ready = provider.get_tools()
        except Exception:
            ready = []
        if ready:
            catalog.python.update({t.name.lower(): t for t in ready})
        else:
            catalog.providers.append(provider)

    def problem(unit: Unit, index: int, message: str, code: str, severity: str = "error") -> None:
        line, col = unit.at(("tools", index))
        problems.append(Diagnostic(unit.file, line, col, severity, message, code))  # type: ignore[arg-type]

    for unit in units:
        options = dict(unit.model.tool_options)
        for index, entry in enumerate(unit.model.tools):
            found: list[Tool | ToolProvider] = []
            try:
                if isinstance(entry, MCPToolEntry):
                    from jianmu_bt.mcp import MCPToolProvider  # optional layer: load on use

                    found = [MCPToolProvider.from_config(entry.mcp)]
                elif isinstance(entry, PythonToolEntry):
                    found = _as_tools(_import(entry.python, base_dirs), entry.python, entry.args)
                elif isinstance(entry, str) and ":" in entry:
                    found = _as_tools(_import(entry, base_dirs), entry, {})
                    if len(found) == 1 and isinstance(found[0], Tool):
                        catalog.imported[entry] = found[0]
                else:
                    name = entry.builtin if isinstance(entry, BuiltinToolEntry) else entry
                    extra = entry.options if isinstance(entry, BuiltinToolEntry) else {}
                    key = BuiltinToolProvider.canonical_name(name)
                    if key in catalog.python or name.lower() in catalog.python:
                        continue  # a Python tool passed in takes the built-in's place
                    found = [BuiltinToolProvider.build(name, {**options, **extra})]
            except ImportProblem as exc:
                problem(unit, index, str(exc), "import-error")
            except UnknownToolError as exc:
                name = exc.names[0] if exc.names else str(entry)
                known = [*BuiltinToolProvider.list_builtin_names(), *catalog.python]
                problem(
                    unit,
                    index,
                    f"unknown tool '{name}'{did_you_mean(name, known)}; "
                    "write a built-in name, an alias, or 'module:attr' of a Python tool",
                    "unknown-tool",
                )
            except ToolUnavailableError as exc:
                catalog.unavailable[BuiltinToolProvider.canonical_name(str(entry))] = str(exc)
                problem(unit, index, str(exc), "tool-unavailable", "warning")
            except (ValueError, TypeError) as exc:
                problem(unit, index, f"cannot use this tool entry: {exc}", "tool-entry")
            for item in found:
                if isinstance(item, Tool):
                    catalog.tools[item.name.lower()] = item
                else:
                    catalog.providers.append(item)
    return catalog, problems

"""The tool stage: the tree's ToolCatalog from every file's `tools:`, Python tools and providers.

| entry                                   | gives                                                 |
|-----------------------------------------|-------------------------------------------------------|
| `calculator`, `file_read` (an alias)    | the built-in, built with the file's `tool_options`    |
| `"my_pkg.tools:word_count"`             | a Tool, Tool class, factory or ToolProvider by path   |
| `{builtin: read_file, options: {...}}`  | a built-in with its own options                       |
| `{python: "pkg.mod:make", args: {...}}` | a factory called with `args`                          |
| `{mcp: {command: ..., prefix: ...}}`    | the tools of an MCP server (known once it started)    |
| `{agent: {name: ..., tools: [...]}}`    | an agent as a tool (`AgentTool`), built last      |
| `{external: {name: ..., ...}}`          | a tool answered from outside (`ExternalTool`)         |

Tools passed to `load_tree(tools=...)` beat file tools and built-ins of the same name. A tree
node may also name a built-in that no `tools:` entry lists; it is built on demand. Import paths
are resolved with the tree file's folder on `sys.path`, so a `tools.py` next to the tree works.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from jianmu_bt.loader.catalog import ImportProblem, ToolCatalog, import_tools
from jianmu_bt.loader.diagnostics import Diagnostic, Severity
from jianmu_bt.loader.model import BuiltinToolEntry, MCPToolEntry, PythonToolEntry
from jianmu_bt.loader.model_agent_tool import AgentToolEntry
from jianmu_bt.loader.model_external_tool import ExternalToolEntry
from jianmu_bt.loader.records import Unit
from jianmu_bt.loader.repair import Repair
from jianmu_bt.tools import (
    BuiltinToolProvider,
    Tool,
    ToolConfigurationError,
    ToolProvider,
    ToolSet,
    ToolUnavailableError,
    UnknownToolError,
)
from jianmu_bt.tools.references import did_you_mean

#: Tool options that name a path: a relative one is taken from the tree file's folder, so a tree
#: works the same wherever it is run from.
PATH_OPTIONS = ("workspace",)


def anchored(options: Mapping[str, Any], base_dir: Path) -> dict[str, Any]:
    """`options` with each relative path option (PATH_OPTIONS) made relative to `base_dir`."""
    found = dict(options)
    for key in PATH_OPTIONS:
        value = found.get(key)
        if isinstance(value, str) and value and not Path(value).expanduser().is_absolute():
            found[key] = str(base_dir / value)
    return found


def _catalog(
    units: list[Unit],
    python_tools: Iterable[Tool] | ToolSet | None,
    providers: Iterable[ToolProvider] | None,
) -> ToolCatalog:
    """The catalog before the files' entries: the Python tools and providers passed in."""
    catalog = ToolCatalog(
        options=anchored(units[0].model.tool_options, units[0].base_dir) if units else {},
        base_dirs=list(dict.fromkeys(u.base_dir for u in units)),
    )
    for given in python_tools or ():
        if not isinstance(given, Tool):
            raise TypeError(f"tools= takes Tool instances (or a ToolSet), got {given!r}")
        catalog.python[given.name.lower()] = given
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
    return catalog


def _builtin_name(entry: object) -> str | None:
    """The built-in an entry names (None for an import path, an MCP server, a broken entry)."""
    if isinstance(entry, BuiltinToolEntry):
        return entry.builtin
    if isinstance(entry, str) and ":" not in entry:
        return entry
    return None


def _entry_tools(
    entry: object,
    catalog: ToolCatalog,
    options: dict[str, Any],
    base_dirs: list[Path],
    base_dir: Path,
) -> list[Tool | ToolProvider]:
    """What one `tools:` entry gives (ImportProblem, UnknownToolError, ... when it cannot)."""
    if isinstance(entry, MCPToolEntry):
        from jianmu_bt.mcp.provider import MCPToolProvider  # optional layer: load on use

        config = entry.mcp.with_roots_from(base_dir, options.get("workspace"))
        return [MCPToolProvider.from_config(config)]
    if isinstance(entry, PythonToolEntry):
        return import_tools(entry.python, base_dirs, entry.args)
    if isinstance(entry, AgentToolEntry):
        return []  # built last, from the other tools (`_agent_tools`)
    if isinstance(entry, ExternalToolEntry):
        return [entry.external.build()]
    if isinstance(entry, str) and ":" in entry:
        found = import_tools(entry, base_dirs, {})
        if len(found) == 1 and isinstance(found[0], Tool):
            catalog.imported[entry] = found[0]
        return found
    name = _builtin_name(entry)
    if name is None:  # an InvalidToolEntry never validates: nothing to give
        return []
    if BuiltinToolProvider.canonical_name(name) in catalog.python or name.lower() in catalog.python:
        return []  # a Python tool passed in takes the built-in's place
    extra = entry.options if isinstance(entry, BuiltinToolEntry) else {}
    return [BuiltinToolProvider.build(name, {**options, **anchored(extra, base_dir)})]


def resolve_tools(
    units: list[Unit],
    python_tools: Iterable[Tool] | ToolSet | None,
    providers: Iterable[ToolProvider] | None,
    repairs: Mapping[str, Repair] | None = None,
) -> tuple[ToolCatalog, list[Diagnostic]]:
    """The tree's tool catalog from every file's `tools:` entries, and the problems found.

    An entry that cannot give its tool (unknown, not importable, a missing optional package, a
    constructor that refuses its options) is reported where it is written and makes only that
    tool unavailable, with the reason (a node that uses it is then an error there); the other
    entries resolve as usual. Entries the model refused (`repairs`) are skipped: already reported.
    """
    catalog = _catalog(units, python_tools, providers)
    problems: list[Diagnostic] = []

    def problem(
        unit: Unit, index: int, message: str, code: str, severity: Severity = "error"
    ) -> None:
        line, col = unit.at(("tools", index))
        problems.append(Diagnostic(unit.file, line, col, severity, message, code))

    for unit in units:
        options = anchored(unit.model.tool_options, unit.base_dir)
        refused = repairs[unit.key].tool_entries if repairs and unit.key in repairs else set()
        for index, entry in enumerate(unit.model.tools):
            if index in refused:
                continue
            found: list[Tool | ToolProvider] = []
            try:
                found = _entry_tools(entry, catalog, options, catalog.base_dirs, unit.base_dir)
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
            except (ToolUnavailableError, ToolConfigurationError) as exc:
                key = BuiltinToolProvider.canonical_name(_builtin_name(entry) or str(entry))
                catalog.unavailable[key] = str(exc)  # a step using it points here
                catalog.reported_at[key] = (unit.file, unit.at(("tools", index))[0])
                if isinstance(exc, ToolUnavailableError):
                    problem(unit, index, str(exc), "tool-unavailable", "warning")
                else:
                    problem(unit, index, str(exc), "tool-options")
            except (ValueError, TypeError) as exc:
                problem(unit, index, f"cannot use this tool entry: {exc}", "tool-entry")
            if getattr(entry, "runner", None) is not None:  # `runner: ray` on the entry
                found = _bound(found, entry.runner, unit, index, problem)  # type: ignore[union-attr]
            for item in found:
                if isinstance(item, Tool):
                    catalog.tools[item.name.lower()] = item
                else:
                    catalog.providers.append(item)
    for unit in units:
        for index, entry in enumerate(unit.model.tools):
            if isinstance(entry, AgentToolEntry):
                try:
                    tool = agent_tool(entry, catalog)
                except ValueError as exc:
                    problem(unit, index, str(exc), "agent-tool")
                    continue
                catalog.tools[tool.name.lower()] = tool
    return catalog, problems


def agent_tool(entry: AgentToolEntry, catalog: ToolCatalog) -> Tool:
    """The `AgentTool` of an `{agent: ...}` entry, its tools taken from `catalog`; ValueError
    saying what is wrong (an unknown tool, a bad llm, guard or output schema)."""
    from jianmu_bt.llm import LLMConfigurationError, provider_from_config
    from jianmu_bt.llm.output import OutputSpec
    from jianmu_bt.nodes.agent_tool import AgentTool
    from jianmu_bt.nodes.turn_outcome import TurnPolicy

    config = entry.agent
    tools = []
    for name in config.tools:
        found = catalog.get(name)
        if found is None:
            raise ValueError(
                f"agent tool '{config.name}': unknown tool '{name}'"
                f"{did_you_mean(name, [*catalog.tools, *catalog.python])}"
            )
        tools.append(found)
    try:
        provider = provider_from_config(config.llm) if config.llm is not None else None
    except LLMConfigurationError as exc:
        raise ValueError(f"agent tool '{config.name}': {exc}") from None
    if provider is not None:
        catalog.owned_llms.append(provider)
    guard = None
    if config.guard is not None:
        from jianmu_bt.guard import GuardEnforcer

        guard = GuardEnforcer.from_config(config.guard)
    schema = {"type": "object", **config.input} if config.input is not None else None
    try:
        output = OutputSpec(config.output_schema) if config.output_schema is not None else None
        return AgentTool(
            config.name,
            config.description,
            goal=config.goal,
            tools=tools,
            provider=provider,
            system_prompt=config.system_prompt,
            max_iterations=config.max_iterations,
            policy=TurnPolicy(output=output) if output is not None else None,
            limits=config.limits,
            guard=guard,
            input_schema=schema,
        )
    except ValueError as exc:  # a broken input or output schema
        raise ValueError(f"agent tool '{config.name}': {exc}") from None


def _bound(found: list[Any], runner: Any, unit: Unit, index: int, problem: Any) -> list[Any]:
    """The entry's tools bound to its `runner:` (an error for an unknown runner or option)."""
    from jianmu_bt.sandbox.bound import bind_runner

    try:
        return [bind_runner(t, runner) if isinstance(t, Tool) else t for t in found]
    except ValueError as exc:
        problem(unit, index, str(exc), "tool-runner")
        return []

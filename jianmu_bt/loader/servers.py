"""A tree's MCP servers, found by the name a node gives, and the nodes' `prompt:` key.

Nodes that use a server directly (an `mcp_resource` step, an `llm` or `agent` node's `prompt:`)
name it by an `mcp:` entry's `name:` or `prefix:` (or the `server_name=` of a provider passed
to `load_tree(providers=[...])`); the analysis checks the name against the tree's providers
before anything starts (`jianmu validate` included), and the builders find the provider the same
way. Only names given explicitly count: the name a server reports is known only once it started.
Two entries with the same `name:` are an error (`duplicate_servers`): a node naming it would
silently get the first.

`prompt_io` and `prompt_source_for` give a kind with a `prompt:` key (`llm`, `agent`) the
prompt's state reads and server, and its LLM node the prompt as a message source.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from jianmu_bt.loader.diagnostics import Diagnostic
from jianmu_bt.loader.model import MCPToolEntry
from jianmu_bt.loader.node_facts import NodeIO, NodeProblem
from jianmu_bt.loader.positions import Path
from jianmu_bt.loader.template_refs import template_refs
from jianmu_bt.tools.references import did_you_mean

if TYPE_CHECKING:
    from jianmu_bt.loader.context import BuildContext
    from jianmu_bt.loader.prompt_model import MCPPromptRef
    from jianmu_bt.loader.records import NodeRecord, Unit
    from jianmu_bt.nodes.llm_node import PromptSource


def _given_name(provider: Any) -> str | None:
    name = getattr(provider, "given_name", None)  # MCPToolProvider: server_name= or `name:`
    return name if isinstance(name, str) and name else None


def _prefix(provider: Any) -> str | None:
    prefix = getattr(provider, "prefix", None)
    return prefix if isinstance(prefix, str) and prefix else None


def server_names(provider: Any) -> list[str]:
    """The names a node may use for `provider`: its given name and its `prefix:`."""
    return list(dict.fromkeys(n for n in (_given_name(provider), _prefix(provider)) if n))


def find_server(providers: Iterable[Any], name: str) -> Any | None:
    """The provider called `name` by its given name, else by its `prefix:`; None when none is."""
    providers = list(providers)
    for names_of in (_given_name, _prefix):  # a name wins over another entry's `prefix:`
        for provider in providers:
            if names_of(provider) == name:
                return provider
    return None


def unknown_server(name: str, providers: Iterable[Any]) -> str:
    """Why `name` names no MCP server of the tree, with a did-you-mean and the known names."""
    known = [n for provider in providers for n in server_names(provider)]
    if not known:
        return (
            f"no MCP server named '{name}': the tree has no `mcp:` entry with a `name:` or "
            "`prefix:`; add one under `tools:` (e.g. - mcp: {command: ..., name: " + name + "})"
        )
    return (
        f"no MCP server named '{name}'{did_you_mean(name, known)}; the tree's MCP servers "
        f"(by `name:` or `prefix:`): {', '.join(known)}"
    )


def duplicate_servers(units: Iterable[Unit], providers: Iterable[Any]) -> list[Diagnostic]:
    """An error at each `mcp:` entry whose `name:` an earlier entry (or a provider passed to
    `load_tree(providers=...)`) already has. `providers` are the tree's: file entries last."""
    entries = [
        (unit, index, entry.mcp.name)
        for unit in units
        for index, entry in enumerate(unit.model.tools)
        if isinstance(entry, MCPToolEntry) and entry.mcp.name
    ]
    in_file = Counter(name for *_, name in entries)
    given = Counter(name for name in map(_given_name, providers) if name)
    # More providers of a name than file entries of it: providers passed in have it too.
    first = {
        name: "a provider passed to load_tree" for name in given if given[name] > in_file[name]
    }
    problems: list[Diagnostic] = []
    for unit, index, name in entries:
        path = ("tools", index, "mcp", "name")
        line, col = unit.at(path)
        if name in first:
            problems.append(
                Diagnostic(
                    unit.file,
                    line,
                    col,
                    "error",
                    f"two MCP servers are named '{name}' (the other: {first[name]}); a node "
                    "naming it would get the first: give each `mcp:` entry its own `name:`",
                    "duplicate-mcp-server",
                )
            )
        else:
            first[name] = f"the `mcp:` entry at {unit.file}:{line}"
    return problems


def server_provider(name: str, ctx: BuildContext, path: Path) -> Any:
    """The MCP provider a node names (it starts with the tree); NodeProblem at `path` when the
    tree has none of that name."""
    provider = find_server(ctx.catalog.providers, name)
    if provider is None or getattr(provider, "client", None) is None:
        message = unknown_server(name, ctx.catalog.providers)
        raise NodeProblem(message, path, code="unknown-mcp-server")
    return provider


def prompt_io(prompt: MCPPromptRef | None, io: NodeIO) -> NodeIO:
    """`io` with what a node's `prompt:` uses: its arguments' `{key}`s, read, and its server."""
    if prompt is not None:
        for key, where in template_refs(prompt.arguments, ("prompt", "arguments")).items():
            io.reads.setdefault(key, where)
        io.servers.append((prompt.mcp, ("prompt", "mcp")))
    return io


def prompt_source_for(
    prompt: MCPPromptRef | None, record: NodeRecord, ctx: BuildContext
) -> PromptSource | None:
    """The LLM node's message source for a `prompt:` (None without one): the named server's
    prompt, its argument templates over the node's (renamed) state keys."""
    if prompt is None:
        return None
    from jianmu_bt.mcp.prompt_source import prompt_source  # the MCP layer loads on use

    provider = server_provider(prompt.mcp, ctx, ("prompt", "mcp"))
    arguments = record.keys.template(prompt.arguments)
    return prompt_source(provider.client, prompt.name, arguments, server=prompt.mcp)


__all__ = [
    "duplicate_servers",
    "find_server",
    "prompt_io",
    "prompt_source_for",
    "server_names",
    "server_provider",
    "unknown_server",
]

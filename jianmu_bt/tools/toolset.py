"""ToolSet: one ordered, immutable-style collection of tools from any source.

Built-ins by name, explicit Tool instances and providers (MCP servers) all end up in a ToolSet,
which looks tools up, exports their schemas and executes calls. Same-named tools: the last one
added wins and takes the first one's place in the order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.calls import ToolCall, ToolResult
from jianmu_bt.tools.effects import check_effects
from jianmu_bt.tools.providers import ToolProvider
from jianmu_bt.tools.registry import BuiltinToolProvider

if TYPE_CHECKING:
    from jianmu_bt.tools.runners import ToolRunner


class ToolSet:
    """An ordered set of tools, keyed case-insensitively by name.

    Methods that add tools (`merge`, `with_tools`) return a new ToolSet and leave this one as it
    was. A ToolSet may carry a default `runner` used for every call that does not name one. A
    tool declared read-only with a write effect tag is refused (EffectDeclarationError).
    """

    __slots__ = ("_tools", "runner")

    def __init__(self, tools: Iterable[Tool] = (), runner: ToolRunner | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        for item in tools:
            if not isinstance(item, Tool):
                raise TypeError(f"a ToolSet holds Tool instances, got {item!r}")
            if item.read_only is True:  # also when set on an instance after it was made
                check_effects(item.name, True, item.effect_tags)
            self._tools[item.name.lower()] = item
        self.runner = runner

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def from_tools(cls, tools: Iterable[Tool], runner: ToolRunner | None = None) -> ToolSet:
        """A ToolSet of these instances (last wins on a name clash)."""
        return cls(tools, runner=runner)

    @classmethod
    def resolve(
        cls,
        names: Iterable[str],
        custom_tools: Iterable[Tool] | None = None,
        runner: ToolRunner | None = None,
        **options: Any,
    ) -> ToolSet:
        """Built-ins by name (aliases apply) plus custom tools, which beat same-named built-ins.

        `options` go to the built-in tools' constructors that accept them (for example a
        workspace root). Unknown names raise UnknownToolError.
        """
        tools = BuiltinToolProvider.resolve_named_tools(names, custom_tools, options=options)
        return cls(tools, runner=runner)

    @classmethod
    def from_providers(cls, providers: Iterable[ToolProvider], **kwargs: Any) -> ToolSet:
        """The tools of already-initialised providers, in provider order (last wins)."""
        tools: list[Tool] = []
        for provider in providers:
            tools.extend(provider.get_tools(**kwargs))
        return cls(tools)

    @staticmethod
    def list_builtin_names() -> list[str]:
        """Every registered built-in tool name."""
        return BuiltinToolProvider.list_builtin_names()

    def merge(self, *others: ToolSet | Iterable[Tool]) -> ToolSet:
        """A new ToolSet with this one's tools, then each other set's (last wins)."""
        tools = list(self._tools.values())
        for other in others:
            tools.extend(other)
        return ToolSet(tools, runner=self.runner)

    def with_tools(self, tools: Iterable[Tool]) -> ToolSet:
        """A new ToolSet with `tools` added (they win on a name clash)."""
        return self.merge(tools)

    def with_runner(self, runner: ToolRunner | None) -> ToolSet:
        """A new ToolSet with the same tools and a different default runner."""
        return ToolSet(self._tools.values(), runner=runner)

    def subset(self, names: Iterable[str]) -> ToolSet:
        """A new ToolSet with only the named tools; unknown names raise KeyError."""
        picked = []
        for name in names:
            found = self.get(name) or self.get(BuiltinToolProvider.canonical_name(name))
            if found is None:
                raise KeyError(
                    f"no tool named '{name}' in this set; it has: {', '.join(self.names())}"
                )
            picked.append(found)
        return ToolSet(picked, runner=self.runner)

    # -- lookup ----------------------------------------------------------------------------

    def get(self, name: str) -> Tool | None:
        """The tool with this name (case-insensitive), or None."""
        return self._tools.get(name.lower())

    def __getitem__(self, name: str) -> Tool:
        found = self.get(name)
        if found is None:
            raise KeyError(self._unknown_message(name))
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def tools(self) -> list[Tool]:
        """The tools, in order."""
        return list(self._tools.values())

    def names(self) -> list[str]:
        """Tool names, in order."""
        return [t.name for t in self._tools.values()]

    def describe(self) -> str:
        """A bullet list `- name: description` for prompts."""
        return "\n".join(f"- {t.name}: {t.get_description()}" for t in self._tools.values())

    def schemas(self) -> list[dict[str, Any]]:
        """Every tool's function-calling schema (`Tool.to_schema`)."""
        return [t.to_schema() for t in self._tools.values()]

    def specs(self) -> list[dict[str, Any]]:
        """Every tool's full spec (`Tool.spec`)."""
        return [t.spec() for t in self._tools.values()]

    def is_parallel_safe(self, names: Iterable[str]) -> bool:
        """True when every named tool exists and is parallel_safe."""
        for name in names:
            found = self.get(name)
            if found is None or not found.parallel_safe:
                return False
        return True

    # -- execution -------------------------------------------------------------------------

    async def execute(
        self,
        name: str,
        args: Any = None,
        injected: Mapping[str, Any] | None = None,
        runner: ToolRunner | None = None,
        prefer_injected: bool = True,
    ) -> Any:
        """Run the named tool and return its raw result; KeyError for an unknown name."""
        found = self.get(name)
        if found is None:
            raise KeyError(self._unknown_message(name))
        return await found.execute(args, injected, runner or self.runner, prefer_injected)

    async def call(
        self,
        call: str | ToolCall,
        args: Any = None,
        *,
        injected: Mapping[str, Any] | None = None,
        runner: ToolRunner | None = None,
        prefer_injected: bool = True,
        timeout: float | None = None,
    ) -> ToolResult:
        """Run a call and always return a ToolResult: unknown names and faults become errors."""
        if isinstance(call, ToolCall):
            name, args = call.name, call.arguments
        else:
            name = call
        found = self.get(name)
        if found is None:
            return ToolResult.failure(name, f"Error: {self._unknown_message(name)}")
        return await found.call(
            args,
            injected=injected,
            runner=runner or self.runner,
            prefer_injected=prefer_injected,
            timeout=timeout,
        )

    def _unknown_message(self, name: str) -> str:
        available = ", ".join(self.names()) or "none"
        return f"unknown tool '{name}'; available tools: {available}"

    def __repr__(self) -> str:
        return f"ToolSet({self.names()!r})"

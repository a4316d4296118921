"""BuiltinToolProvider: the lazily loaded registry of built-in tools and their aliases.

Each built-in is registered as an import path and imported only when first resolved, so a tool
whose optional dependency is missing is skipped with a logged reason and never breaks the others.
"""

from __future__ import annotations

import difflib
import inspect
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, TypeGuard

from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.providers import BaseToolProvider
from jianmu_bt.tools.references import ReferenceProblem, resolve_reference

logger = logging.getLogger(__name__)

ToolSource = type[Tool] | Callable[..., Tool] | Tool | str

# The built-in tools are registered as package entry points (group "jianmu.tools" in
# pyproject.toml: name = "module:attr"), read once, on first use. The tools layer so never names
# the modules above it, and any installed package can add tools the same way. A module that cannot
# be imported marks its tool unavailable, with the reason.
ENTRY_POINT_GROUP = "jianmu.tools"
DISTRIBUTION = "jianmu-bt"

_DEFAULT_ALIASES: dict[str, str] = {
    "file_read": "read_file",
    "file_write": "write_file",
    "ls": "list_dir",
    "glob": "glob_search",
    "grep": "grep_search",
    "python": "python_repl",
    "shell": "bash",
    "http": "http_request",
    "web_search": "duckduckgo_search",
    "search": "duckduckgo_search",
}


class UnknownToolError(KeyError):
    """A tool name that is neither registered nor an alias; the message suggests close names."""

    def __init__(self, names: Iterable[str], known: Iterable[str]) -> None:
        names, known = list(names), sorted(known)
        hints = []
        for name in names:
            close = difflib.get_close_matches(name, known, n=2)
            hints.append(f"'{name}'" + (f" (did you mean {' or '.join(close)}?)" if close else ""))
        self.names = names
        super().__init__(f"unknown tool {', '.join(hints)}; known tools: {', '.join(known)}")

    def __str__(self) -> str:
        return str(self.args[0])


class ToolUnavailableError(RuntimeError):
    """A registered tool that cannot be built here (missing optional dependency, not built yet)."""


class ToolConfigurationError(ValueError):
    """A built-in tool refused its options (for example a workspace folder that does not exist)."""


class BuiltinToolProvider(BaseToolProvider):
    """The registry of built-in tools, also usable as a ToolProvider of the named tools.

    The class-level registry is filled on first use. `register_tool` / `register_alias` extend it
    for the whole process; `resolve_named_tools` builds instances, custom tools winning by name.
    """

    _builtins: ClassVar[dict[str, ToolSource]] = {}
    _aliases: ClassVar[dict[str, str]] = {}
    _loaded: ClassVar[int] = 0  # entry points read: 0 none, 1 jianmu-bt's own, 2 every one

    def __init__(self, names: Iterable[str] | None = None, **options: Any) -> None:
        self.names = list(names) if names is not None else None
        self.options = options

    def get_tools(self, **kwargs: Any) -> list[Tool]:
        """The named built-ins (all available ones when no names were given)."""
        names = self.names if self.names is not None else self.list_builtin_names()
        return self.resolve_named_tools(names, options={**self.options, **kwargs})

    # -- registry --------------------------------------------------------------------------

    @classmethod
    def _ensure_builtins(cls, name: str | None = None) -> None:
        """Read the entry points: jianmu-bt's own first, which a name of theirs (or an alias)
        needs alone; every installed distribution's for any other name, or for none (a list).

        So resolving `calculator` reads one distribution's metadata, not each installed one's,
        and a name jianmu-bt's tools have stays theirs: another distribution cannot take it
        over by being installed (`register_tool` can)."""
        if cls._loaded < 1:
            for tool_name, source in _entry_point_tools(own=True).items():
                cls._builtins.setdefault(tool_name, source)
            for alias, target in _DEFAULT_ALIASES.items():
                cls._aliases.setdefault(alias, target)
            cls._loaded = 1
        if cls._loaded < 2 and (
            name is None or (name not in cls._builtins and name not in cls._aliases)
        ):
            for tool_name, source in _entry_point_tools(own=False).items():
                cls._builtins.setdefault(tool_name, source)
            cls._loaded = 2
            if not cls._builtins:
                logger.warning(
                    "no built-in tools are registered: jianmu-bt's entry points are missing (is "
                    "the package installed? `pip install -e .` in a source checkout)"
                )

    @classmethod
    def register_tool(cls, name: str, tool: ToolSource) -> None:
        """Register a built-in: a Tool subclass, a factory returning a Tool, or "module:attr"."""
        cls._ensure_builtins()
        cls._builtins[name.lower()] = tool

    @classmethod
    def register_alias(cls, alias: str, name: str) -> None:
        """Make `alias` resolve to the registered tool `name`."""
        cls._ensure_builtins()
        cls._aliases[alias.lower()] = name.lower()

    @classmethod
    def canonical_name(cls, name: str) -> str:
        """The registered name for `name` after aliases are applied (lower-cased)."""
        key = name.strip().lower()
        cls._ensure_builtins(key)
        return cls._aliases.get(key, key)

    @classmethod
    def list_builtin_names(cls) -> list[str]:
        """Every registered built-in name, in registration order."""
        cls._ensure_builtins()
        return list(cls._builtins)

    @classmethod
    def list_aliases(cls) -> dict[str, str]:
        """alias -> registered name."""
        cls._ensure_builtins()
        return dict(cls._aliases)

    @classmethod
    def availability(cls) -> dict[str, str | None]:
        """name -> None when the built-in can be loaded here, else the reason it cannot."""
        result: dict[str, str | None] = {}
        for name in cls.list_builtin_names():
            try:
                factory = cls._load(name)
            except ToolUnavailableError as exc:
                result[name] = str(exc)
                continue
            missing = factory.missing_requirement() if _is_tool_class(factory) else None
            result[name] = f"built-in tool '{name}': {missing}" if missing else None
        return result

    @classmethod
    def _load(cls, name: str) -> Callable[..., Tool] | Tool:
        """The class, factory or tool (a `@tool` function is one) registered as `name`,
        imported on first use."""
        source = cls._builtins[name]
        if not isinstance(source, str):
            return source
        try:
            found = resolve_reference(source)
        except ReferenceProblem as exc:
            raise ToolUnavailableError(f"built-in tool '{name}' is not available: {exc}") from exc
        if isinstance(found, Tool):
            return found
        if not callable(found):
            raise ToolUnavailableError(
                f"built-in tool '{name}' is not available: '{source}' is a "
                f"{type(found).__name__}, not a Tool class or factory"
            )
        factory: Callable[..., Tool] = found
        return factory

    @classmethod
    def build(cls, name: str, options: Mapping[str, Any] | None = None) -> Tool:
        """One built-in instance; options go to its constructor where it accepts them.

        Raises UnknownToolError for an unregistered name, ToolUnavailableError when the tool
        cannot be built here (its module does not import, or it reports a `missing_requirement`
        that none of the options its class lists in `replaces_requirement` is given to
        replace), and ToolConfigurationError when it refuses its options (its constructor
        raised).
        """
        key = cls.canonical_name(name)
        if key not in cls._builtins:
            raise UnknownToolError([name], [*cls._builtins, *cls._aliases])
        factory = cls._load(key)
        if isinstance(factory, Tool):  # a tool itself (a `@tool` function): no options to take
            return factory
        kwargs = _accepted_kwargs(factory, options or {})
        # Built without its optional package, the tool could only fail each call: it is
        # unavailable, with the reason, unless an option it names in `replaces_requirement`
        # (web search's `search_backend`) replaces what is missing; other options do not.
        missing = factory.missing_requirement() if _is_tool_class(factory) else None
        replacing = getattr(factory, "replaces_requirement", ())
        if missing and not any(kwargs.get(option) is not None for option in replacing):
            raise ToolUnavailableError(f"built-in tool '{key}' is not available: {missing}")
        try:
            instance = factory(**kwargs)
        except Exception as exc:
            if not kwargs:  # it cannot be built here at all (a plugin's factory, say)
                raise ToolUnavailableError(
                    f"built-in tool '{key}' is not available: building it raised "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            raise ToolConfigurationError(
                f"built-in tool '{key}' refused its options: {exc}"
            ) from exc
        if not isinstance(instance, Tool):
            raise ToolUnavailableError(f"built-in '{key}' did not produce a Tool: {instance!r}")
        return instance

    @classmethod
    def resolve_named_tools(
        cls,
        names: Iterable[str],
        custom_tools: Iterable[Tool] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> list[Tool]:
        """Instances for `names` (aliases applied), custom tools beating built-ins by name.

        Every custom tool is included. An unknown name raises UnknownToolError listing all of
        them; a built-in that cannot be built here is skipped with a logged warning; options a
        built-in refuses raise ToolConfigurationError.
        """
        custom = {t.name.lower(): t for t in custom_tools or ()}
        tools: dict[str, Tool] = {}
        unknown: list[str] = []
        for raw_name in names:
            key = cls.canonical_name(raw_name)
            if key in custom or raw_name.lower() in custom:
                chosen = custom.get(key) or custom[raw_name.lower()]
                tools[chosen.name.lower()] = chosen
                continue
            if key not in cls._builtins:
                unknown.append(raw_name)
                continue
            try:
                tools[key] = cls.build(key, options)
            except ToolUnavailableError as exc:
                logger.warning("skipping %s", exc)
        if unknown:
            raise UnknownToolError(unknown, [*cls._builtins, *cls._aliases, *custom])
        for key, custom_tool in custom.items():
            tools.setdefault(key, custom_tool)
        return list(tools.values())


def _is_tool_class(factory: object) -> TypeGuard[type[Tool]]:
    return inspect.isclass(factory) and issubclass(factory, Tool)


def _entry_point_tools(*, own: bool) -> dict[str, str]:
    """name -> "module:attr" of the tools registered under ENTRY_POINT_GROUP: by jianmu-bt's
    own distribution (`own`), else by every installed one."""
    from importlib import metadata  # only when the registry is first used

    if not own:
        found = metadata.entry_points(group=ENTRY_POINT_GROUP)
    else:
        try:
            found = metadata.distribution(DISTRIBUTION).entry_points.select(group=ENTRY_POINT_GROUP)
        except metadata.PackageNotFoundError:  # a source checkout that is not installed
            return {}
    return {ep.name.lower(): ep.value for ep in found}


def _accepted_kwargs(factory: Callable[..., Any], options: Mapping[str, Any]) -> dict[str, Any]:
    if not options:
        return {}
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return {}
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return dict(options)
    return {k: v for k, v in options.items() if k in params}

"""BuiltinToolProvider: the lazily loaded registry of built-in tools and their aliases.

Each built-in is registered as an import path and imported only when first resolved, so a tool
whose optional dependency is missing is skipped with a logged reason and never breaks the others.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.providers import BaseToolProvider

logger = logging.getLogger(__name__)

ToolSource = type[Tool] | Callable[..., Tool] | str

# The built-in tools: name -> "module:attr". The modules come with the built-in tools and the
# sandbox runners; a module that cannot be imported marks its tool unavailable, with the reason.
_DEFAULT_BUILTINS: dict[str, str] = {
    "read_file": "jianmu_bt.tools.builtin.files:ReadFileTool",
    "write_file": "jianmu_bt.tools.builtin.files:WriteFileTool",
    "list_dir": "jianmu_bt.tools.builtin.files:ListDirTool",
    "file_info": "jianmu_bt.tools.builtin.files:FileInfoTool",
    "str_replace": "jianmu_bt.tools.builtin.edit_file:StrReplaceTool",
    "glob_search": "jianmu_bt.tools.builtin.search_files:GlobSearchTool",
    "grep_search": "jianmu_bt.tools.builtin.search_files:GrepSearchTool",
    "calculator": "jianmu_bt.tools.builtin.calculator:CalculatorTool",
    "http_request": "jianmu_bt.tools.builtin.http:HTTPRequestTool",
    "duckduckgo_search": "jianmu_bt.tools.builtin.web_search:DuckDuckGoSearchTool",
    "python_repl": "jianmu_bt.tools.builtin.python_repl:PythonREPLTool",
    "bash": "jianmu_bt.tools.builtin.bash:BashTool",
}

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
    _loaded: ClassVar[bool] = False

    def __init__(self, names: Iterable[str] | None = None, **options: Any) -> None:
        self.names = list(names) if names is not None else None
        self.options = options

    def get_tools(self, **kwargs: Any) -> list[Tool]:
        """The named built-ins (all available ones when no names were given)."""
        names = self.names if self.names is not None else self.list_builtin_names()
        return self.resolve_named_tools(names, options={**self.options, **kwargs})

    # -- registry --------------------------------------------------------------------------

    @classmethod
    def _ensure_builtins(cls) -> None:
        if not cls._loaded:
            for name, source in _DEFAULT_BUILTINS.items():
                cls._builtins.setdefault(name, source)
            for alias, name in _DEFAULT_ALIASES.items():
                cls._aliases.setdefault(alias, name)
            cls._loaded = True

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
        cls._ensure_builtins()
        key = name.strip().lower()
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
                cls._load(name)
                result[name] = None
            except ToolUnavailableError as exc:
                result[name] = str(exc)
        return result

    @classmethod
    def _load(cls, name: str) -> type[Tool] | Callable[..., Tool]:
        source = cls._builtins[name]
        if not isinstance(source, str):
            return source
        module_name, _, attr = source.partition(":")
        try:
            return getattr(importlib.import_module(module_name), attr)
        except ImportError as exc:
            raise ToolUnavailableError(f"built-in tool '{name}' is not available: {exc}") from exc
        except AttributeError as exc:
            raise ToolUnavailableError(f"built-in tool '{name}': {source} not found") from exc

    @classmethod
    def build(cls, name: str, options: Mapping[str, Any] | None = None) -> Tool:
        """One built-in instance; options go to its constructor where it accepts them.

        Raises UnknownToolError for an unregistered name, ToolUnavailableError when the tool
        cannot be built here, and ToolConfigurationError when it refuses its options.
        """
        key = cls.canonical_name(name)
        if key not in cls._builtins:
            raise UnknownToolError([name], [*cls._builtins, *cls._aliases])
        factory = cls._load(key)
        kwargs = _accepted_kwargs(factory, options or {})
        try:
            instance = factory(**kwargs)
        except Exception as exc:
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

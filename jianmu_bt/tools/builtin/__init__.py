"""The built-in tools: files, code search, calculator, HTTP, web search (and the sandbox's tools).

Built-ins are normally obtained by name, `ToolSet.resolve(["read_file", "calculator"],
workspace="...")`, which imports only the modules of the tools named. The classes are also
importable from here; each is loaded on first access, so importing this package costs nothing
and an optional dependency (ddgs) is loaded only when a search runs.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "ReadFileTool": "files",
    "WriteFileTool": "files",
    "ListDirTool": "files",
    "FileInfoTool": "files",
    "StrReplaceTool": "edit_file",
    "GlobSearchTool": "search_files",
    "GrepSearchTool": "search_files",
    "CalculatorTool": "calculator",
    "Calculator": "calculator",
    "CalculatorLimits": "calculator",
    "HTTPRequestTool": "http",
    "NetworkPolicy": "network_policy",
    "DuckDuckGoSearchTool": "web_search",
    "SearchBackend": "web_search",
    "DDGSBackend": "web_search",
    "Workspace": "workspace",
    "WorkspaceError": "workspace",
    "ToolFault": "model_tool",
    "PythonREPLTool": "python_repl",
    "BashTool": "bash",
    "CommandPolicy": "bash",
    "SandboxedTool": "sandboxed",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])

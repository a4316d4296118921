"""The built-in tools: files, code search, calculator, HTTP, web search (and the sandbox's tools).

Built-ins are normally obtained by name, `ToolSet.resolve(["read_file", "calculator"],
workspace="...")`, which imports only the modules of the tools named. The classes are also
importable from here; each is loaded on first access, so importing this package costs nothing
and an optional dependency (ddgs) is loaded only when a search runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jianmu_bt._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see
    from jianmu_bt.tools.builtin.bash import BashTool as BashTool, CommandPolicy as CommandPolicy
    from jianmu_bt.tools.builtin.calculator import (
        Calculator as Calculator,
        CalculatorLimits as CalculatorLimits,
        CalculatorTool as CalculatorTool,
    )
    from jianmu_bt.tools.builtin.edit_file import StrReplaceTool as StrReplaceTool
    from jianmu_bt.tools.builtin.faults import ToolFault as ToolFault
    from jianmu_bt.tools.builtin.files import (
        FileInfoTool as FileInfoTool,
        ListDirTool as ListDirTool,
        ReadFileTool as ReadFileTool,
        WriteFileTool as WriteFileTool,
    )
    from jianmu_bt.tools.builtin.http import HTTPRequestTool as HTTPRequestTool
    from jianmu_bt.tools.builtin.network_policy import NetworkPolicy as NetworkPolicy
    from jianmu_bt.tools.builtin.python_repl import PythonREPLTool as PythonREPLTool
    from jianmu_bt.tools.builtin.sandboxed import SandboxedTool as SandboxedTool
    from jianmu_bt.tools.builtin.search_files import (
        GlobSearchTool as GlobSearchTool,
        GrepSearchTool as GrepSearchTool,
    )
    from jianmu_bt.tools.builtin.web_search import (
        DDGSBackend as DDGSBackend,
        DuckDuckGoSearchTool as DuckDuckGoSearchTool,
        SearchBackend as SearchBackend,
    )
    from jianmu_bt.tools.builtin.workspace import (
        Workspace as Workspace,
        WorkspaceError as WorkspaceError,
    )

__getattr__, __dir__ = lazy_exports(__name__, globals())

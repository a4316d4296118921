"""Lazy package facades (PEP 562): a package exports its names, each imported on first use.

A package's `__init__` lists its public names once, as the imports of an `if TYPE_CHECKING:` block
(what type checkers and IDEs read; `X as X` marks an explicit re-export), and installs the hooks:

```python
if TYPE_CHECKING:
    from jianmu_bt.guard.config import GuardConfig as GuardConfig
    from jianmu_bt import guard as guard  # (in the root) a subpackage, also loaded on first use
__getattr__, __dir__ = lazy_exports(__name__, globals())
```
Importing the package then imports none of those modules. The first look-up of a name reads that
block from the package's source (once, with `ast`) to learn where each name comes from; `pkg.Name`
or `from pkg import Name` then imports the defining module and keeps the value in the package's
namespace, so later look-ups are plain attribute reads. `__all__` is every such name but the
subpackages. This module
imports nothing of the project, so any layer's package may use it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, MutableMapping
from typing import Any

GetAttr = Callable[[str], Any]
"""A module-level `__getattr__` (PEP 562)."""

Dir = Callable[[], list[str]]
"""A module-level `__dir__` (PEP 562)."""


def lazy_exports(package: str, namespace: MutableMapping[str, Any]) -> tuple[GetAttr, Dir]:
    """The `__getattr__` and `__dir__` of `package` (whose `globals()` is `namespace`) that import
    each name of its `if TYPE_CHECKING:` block on first use."""
    table: dict[str, tuple[str, str]] = {}

    def exports() -> dict[str, tuple[str, str]]:
        if not table:
            table.update(type_checking_imports(namespace["__file__"]))
        return table

    def __getattr__(name: str) -> Any:
        if name == "__all__":  # the names, not the subpackages (a star import stays light)
            value: Any = [n for n, (module, _) in exports().items() if module != package]
        elif name in exports():
            module, original = exports()[name]
            if module == package:  # `from pkg import sub as sub`: a subpackage
                module, original = f"{package}.{original}", ""
            # `__import__`, unlike `importlib.import_module`, goes through the interpreter's
            # import path that `python -X importtime` reports, so a lazy load shows up there.
            __import__(module)
            value = getattr(sys.modules[module], original) if original else sys.modules[module]
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports()})

    return __getattr__, __dir__


def type_checking_imports(path: str) -> dict[str, tuple[str, str]]:
    """name -> (module, name in that module) for the `from m import a as b` lines of the
    `if TYPE_CHECKING:` block of the module at `path`."""
    import ast  # only on a package's first look-up

    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read(), path)
    found: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module:
                    for alias in statement.names:
                        found[alias.asname or alias.name] = (statement.module, alias.name)
    return found

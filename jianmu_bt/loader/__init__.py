"""The YAML tree loader: validated files, located errors, static checks, runnable trees.

```python
from jianmu_bt.loader import load_tree, validate_source, TreeLoadError

tree = load_tree("trees/quickstart.yaml")      # or YAML text; TreeLoadError lists every problem
result = tree.run()
```
See docs/yaml.md for the format. `Tree` and what running one needs (the runtime, providers)
load on first use: validating a file (`validate_source`, `jianmu validate`) does not pay for them.
"""

from typing import TYPE_CHECKING

from jianmu_bt._lazy import lazy_exports
from jianmu_bt.loader.api import LoadOptions, format_json_schema, load_tree, validate_source
from jianmu_bt.loader.diagnostics import Diagnostic, TreeLoadError
from jianmu_bt.loader.node_facts import NodeIO, NodeProblem, Outcome
from jianmu_bt.loader.node_info import NodeInfo, node_info
from jianmu_bt.loader.registry import NODE_KINDS, NodeKind, get_kind, node_kinds, register_kind

if TYPE_CHECKING:
    from jianmu_bt.loader.session import ProviderStartError as ProviderStartError
    from jianmu_bt.loader.tree import Tree as Tree, TreeInputError as TreeInputError

__getattr__, __dir__ = lazy_exports(__name__, globals())

__all__ = [
    "NODE_KINDS",
    "Diagnostic",
    "LoadOptions",
    "NodeIO",
    "NodeInfo",
    "NodeKind",
    "NodeProblem",
    "Outcome",
    "ProviderStartError",
    "Tree",
    "TreeInputError",
    "TreeLoadError",
    "format_json_schema",
    "get_kind",
    "load_tree",
    "node_info",
    "node_kinds",
    "register_kind",
    "validate_source",
]

"""Lazy imports: the package root, the guard and the sandbox load a module only when it is used.

Each check runs in a fresh interpreter, so what is imported is what the statement pulled in. Only
which modules are loaded is checked, never how long it took (benchmarks/bench_import.py measures).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import jianmu_bt
import jianmu_bt.guard
import jianmu_bt.sandbox
from jianmu_bt._lazy import type_checking_imports

REPO = Path(__file__).resolve().parents[1]


def loaded_after(code: str, flags: tuple[str, ...] = (), args: tuple[str, ...] = ()) -> set[str]:
    """The modules loaded after running `code` in a fresh interpreter."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, *flags, "-c", script, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def ours(modules: set[str]) -> set[str]:
    return {name for name in modules if name.split(".")[0] == "jianmu_bt"}


def test_importing_the_package_loads_no_layer():
    assert ours(loaded_after("import jianmu_bt")) == {
        "jianmu_bt",
        "jianmu_bt._lazy",
        "jianmu_bt._version",
    }


def test_a_name_from_the_root_loads_only_its_layer():
    loaded = ours(loaded_after("from jianmu_bt import ToolSet, tool"))
    assert {"jianmu_bt.tools", "jianmu_bt.tools.toolset"} <= loaded
    layers = {name.split(".")[1] for name in loaded if name.count(".") >= 1}
    assert not layers & {"guard", "nodes", "runtime", "loader", "llm", "mcp", "sandbox"}


@pytest.mark.parametrize("package", [jianmu_bt, jianmu_bt.guard, jianmu_bt.sandbox])
def test_every_exported_name_resolves_and_is_listed(package):
    # __all__ lists every lazy name (the root's layer packages are attributes, not exports).
    exports = type_checking_imports(package.__file__)
    layers = {name for name, (module, _) in exports.items() if module == package.__name__}
    assert set(package.__all__) - {"__version__"} == set(exports) - layers
    for name in package.__all__:
        assert getattr(package, name) is not None
    assert set(package.__all__) <= set(dir(package))
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        package.nothing_here  # noqa: B018


def test_star_import_and_layer_attributes_still_work():
    namespace: dict[str, object] = {}
    exec("from jianmu_bt import *", namespace)
    assert {"Tool", "load_tree", "GuardEnforcer", "__version__"} <= set(namespace)
    assert jianmu_bt.guard.LayeredGuard.__name__ == "LayeredGuard"
    assert jianmu_bt.__version__ == "0.1.0"


def test_a_tool_from_the_root_becomes_a_node_without_importing_the_tree_layer_first():
    code = (
        "from jianmu_bt import tool\n"
        "@tool\n"
        "def add(a: int, b: int) -> int:\n"
        "    'Add.'\n"
        "    return a + b\n"
        "node = add.as_node(name='Add', output_key='total')\n"
        "assert type(node).__name__ == 'ToolNode', node\n"
    )
    assert "jianmu_bt.nodes.tool_node" in loaded_after(code)


@pytest.mark.parametrize(
    "imports",
    [
        "from jianmu_bt.tools import tool",
        "from jianmu_bt.tools.function_tool import tool",
        "import jianmu_bt.tools; tool = jianmu_bt.tools.tool",
    ],
)
def test_a_tool_becomes_a_node_whichever_way_the_tool_layer_was_imported(imports):
    # The tool layer finds the tree layer's factory through an entry point, not an import.
    code = (
        f"{imports}\n"
        "@tool\n"
        "def add(a: int, b: int) -> int:\n"
        "    'Add.'\n"
        "    return a + b\n"
        "node = add.as_node(name='Add', output_key='total')\n"
        "assert type(node).__name__ == 'ToolNode', node\n"
        "assert node.name == 'Add' and node.output_key == 'total', vars(node)\n"
    )
    assert "jianmu_bt.nodes.tool_node" in loaded_after(code)


def test_the_guard_builds_no_model_and_loads_no_http_client_until_used():
    loaded = loaded_after(
        "from jianmu_bt.guard import GuardEnforcer, ArgumentPredicate, host_not_in\n"
        "GuardEnforcer([ArgumentPredicate('http_request', host_not_in(['example.com']))])"
    )
    assert "jianmu_bt.guard.config" not in loaded  # GuardConfig: only from_config builds it
    assert "jianmu_bt.guard.snapshots" not in loaded  # snapshot models: on first save/restore
    assert "jianmu_bt.guard.enforcer" in loaded


def test_the_sandbox_worker_imports_only_what_it_runs():
    from jianmu_bt.sandbox.worker import BOOTSTRAP

    start = BOOTSTRAP.rsplit(";", 1)[0]  # the bootstrap without serving
    # As LocalSandbox starts it: isolated mode, no bytecode written, the parent's import path.
    loaded = loaded_after(start, ("-I", "-B"), (json.dumps(sys.path),))
    layers = {name.split(".")[1] for name in ours(loaded) if name.count(".") >= 1}
    assert layers <= {"sandbox", "_lazy", "_version"}, sorted(ours(loaded))
    assert not {"pydantic", "httpx", "py_trees", "anyio"} & loaded


def test_checking_a_tree_file_starts_no_event_loop_machinery():
    # `jianmu validate` builds the file's tools to check them, and runs nothing: asyncio and
    # anyio (about 16 ms of its start) are imported when a tool first runs.
    loaded = loaded_after(
        "from jianmu_bt.loader import validate_source\n"
        "assert validate_source('trees/quickstart.yaml') == []"
    )
    assert {"jianmu_bt.tools.base", "jianmu_bt.loader.api"} <= loaded
    assert not {"asyncio", "anyio"} & loaded, sorted({"asyncio", "anyio"} & loaded)

"""`jianmu validate` starts light: it imports what validating needs, not what running needs.

Checked by the modules a fresh process has loaded after the command (no wall-clock times).
"""

import subprocess
import sys

from cli_helpers import TREES

# What only running, drawing or serving a tree needs (the runner, with anyio's event loop
# backend; an HTTP LLM provider; networkx, which the checks do not need; what only a Python
# function tool needs: its signature's docstring parser).
HEAVY = (
    "networkx",
    "httpx",
    "docstring_parser",
    "jianmu_bt.tools.function_tool",
    "jianmu_bt.viz",
    "jianmu_bt.runtime.runner",
    "anyio._backends",
    "jianmu_bt.loader.tree",
    "jianmu_bt.loader.session",
    "jianmu_bt.runtime.durable",
    "jianmu_bt.llm.anthropic",
    "jianmu_bt.llm.openai_compat",
)


def run_code(code: str) -> subprocess.CompletedProcess[str]:
    """`python -c code` in a fresh interpreter (a failure fails the test)."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )


def loaded_after(*argv: str) -> list[str]:
    code = (
        "import sys\n"
        "from jianmu_bt.cli import main\n"
        f"status = main({list(argv)!r})\n"
        f"heavy = {HEAVY!r}\n"
        "print(status, sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    out = run_code(code)
    status, _, modules = out.stdout.strip().splitlines()[-1].partition(" ")
    assert status == "0", out.stdout + out.stderr
    return eval(modules)  # a printed list of module names


def test_validate_loads_nothing_a_run_needs():
    assert loaded_after("validate", str(TREES / "quickstart.yaml")) == []


def test_a_command_imports_its_own_module_and_no_other_commands():
    code = (
        "import sys\n"
        "from jianmu_bt.cli import main\n"
        f"status = main(['--debug', 'validate', {str(TREES / 'quickstart.yaml')!r}])\n"
        "print(status, sorted(m for m in sys.modules if m.endswith('_command')))\n"
    )
    out = run_code(code)
    last = out.stdout.strip().splitlines()[-1]
    assert last == "0 ['jianmu_bt.cli.validate_command']", out.stdout + out.stderr


def test_validate_builds_no_model_only_a_run_needs():
    # An LLM reply's model, and the node configs alone (the file model holds them), are built
    # on first use: validating builds neither.
    code = (
        "from jianmu_bt.cli import main\n"
        f"status = main(['validate', {str(TREES / 'quickstart.yaml')!r}])\n"
        "from jianmu_bt.llm.base import LLMResponse, Usage\n"
        "from jianmu_bt.loader.model import SequenceConfig, ToolStepConfig\n"
        "models = (LLMResponse, Usage, SequenceConfig, ToolStepConfig)\n"
        "print(status, [m.__name__ for m in models if m.__pydantic_complete__])\n"
    )
    out = run_code(code)
    assert out.stdout.strip().splitlines()[-1] == "0 []", out.stdout + out.stderr


def test_the_parser_alone_loads_no_layer():
    code = (
        "import sys\n"
        "from jianmu_bt.cli import build_parser\n"
        "build_parser()\n"
        "print(sorted(m for m in sys.modules if m.startswith(('jianmu_bt.loader', "
        "'jianmu_bt.nodes', 'jianmu_bt.runtime', 'jianmu_bt.viz', 'jianmu_bt.llm'))))\n"
    )
    out = run_code(code)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr

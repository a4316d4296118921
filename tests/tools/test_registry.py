"""BuiltinToolProvider: the lazy registry, aliases, custom tools and providers."""

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_distribution import write_distribution

from jianmu_bt.tools import (
    BaseToolProvider,
    BuiltinToolProvider,
    Tool,
    ToolConfigurationError,
    ToolProvider,
    ToolSet,
    UnknownToolError,
    tool,
)

BUILTIN_NAMES = {
    "read_file",
    "write_file",
    "list_dir",
    "glob_search",
    "grep_search",
    "file_info",
    "str_replace",
    "python_repl",
    "calculator",
    "bash",
    "http_request",
    "duckduckgo_search",
}


class Greeter(Tool):
    name = "greeter"

    def __init__(self, greeting: str = "hello"):
        self.greeting = greeting

    def run(self, input):
        return f"{self.greeting} {input}"


@pytest.fixture
def registry_snapshot():
    BuiltinToolProvider._ensure_builtins()
    builtins = dict(BuiltinToolProvider._builtins)
    aliases = dict(BuiltinToolProvider._aliases)
    yield
    BuiltinToolProvider._builtins.clear()
    BuiltinToolProvider._builtins.update(builtins)
    BuiltinToolProvider._aliases.clear()
    BuiltinToolProvider._aliases.update(aliases)


def test_all_twelve_builtin_names_are_registered():
    assert set(BuiltinToolProvider.list_builtin_names()) >= BUILTIN_NAMES
    assert set(ToolSet.list_builtin_names()) >= BUILTIN_NAMES


def test_default_aliases():
    assert BuiltinToolProvider.canonical_name("file_read") == "read_file"
    assert BuiltinToolProvider.canonical_name("Web_Search") == "duckduckgo_search"


def test_register_tool_and_alias(registry_snapshot):
    BuiltinToolProvider.register_tool("greeter", Greeter)
    BuiltinToolProvider.register_alias("hi", "greeter")
    toolset = ToolSet.resolve(["hi"], greeting="hey")
    assert toolset.names() == ["greeter"]
    assert toolset.get("greeter").greeting == "hey"  # options reach constructors that take them


def test_register_by_import_path_is_lazy(registry_snapshot):
    BuiltinToolProvider.register_tool("lazy", "tests_that_do_not_exist.module:Thing")
    assert "lazy" in BuiltinToolProvider.list_builtin_names()  # nothing imported yet
    reason = BuiltinToolProvider.availability()["lazy"]
    assert "not available" in reason and "tests_that_do_not_exist" in reason


def test_unavailable_builtin_is_skipped_with_a_logged_reason(registry_snapshot, caplog):
    BuiltinToolProvider.register_tool("greeter", Greeter)
    BuiltinToolProvider.register_tool("broken", "tests_that_do_not_exist.module:Thing")
    with caplog.at_level(logging.WARNING, logger="jianmu_bt.tools.registry"):
        toolset = ToolSet.resolve(["broken", "greeter"])
    assert toolset.names() == ["greeter"]
    assert "broken" in caplog.text and "not available" in caplog.text


def test_options_a_builtin_refuses_are_a_clear_error(registry_snapshot):
    def needs_folder(workspace: str = "."):
        raise ValueError(f"workspace {workspace} does not exist")

    BuiltinToolProvider.register_tool("picky", needs_folder)
    with pytest.raises(
        ToolConfigurationError, match="'picky' refused its options: workspace /nope"
    ):
        ToolSet.resolve(["picky"], workspace="/nope")


def test_unknown_name_is_an_error_with_suggestions():
    with pytest.raises(UnknownToolError) as info:
        ToolSet.resolve(["calculater"])
    assert "unknown tool 'calculater'" in str(info.value)
    assert "did you mean calculator" in str(info.value)


def test_custom_tools_beat_builtins_and_aliases_apply(registry_snapshot):
    BuiltinToolProvider.register_tool("greeter", Greeter)

    @tool(name="read_file")
    def my_reader(path: str) -> str:
        """Custom reader."""
        return path

    toolset = ToolSet.resolve(["file_read", "greeter"], custom_tools=[my_reader])
    assert toolset.get("read_file") is my_reader
    assert toolset.names() == ["read_file", "greeter"]


def test_custom_tools_not_named_are_still_included():
    @tool
    def extra() -> str:
        """Extra."""
        return "x"

    assert ToolSet.resolve([], custom_tools=[extra]).names() == ["extra"]


def test_provider_protocol_and_base_provider():
    assert isinstance(BaseToolProvider(), ToolProvider)
    assert isinstance(BuiltinToolProvider(), ToolProvider)
    assert BaseToolProvider().get_tools() == []


@pytest.mark.anyio
async def test_from_providers_collects_tools_in_order(registry_snapshot):
    BuiltinToolProvider.register_tool("greeter", Greeter)

    class Static(BaseToolProvider):
        def __init__(self, tools):
            self.tools = tools

        def get_tools(self, **kwargs):
            return list(self.tools)

    @tool
    def extra() -> str:
        """Extra."""
        return "x"

    providers = [BuiltinToolProvider(["greeter"]), Static([extra])]
    for provider in providers:
        await provider.initialize()
    toolset = ToolSet.from_providers(providers)
    assert toolset.names() == ["greeter", "extra"]
    assert await toolset.execute("greeter", "you") == "hello you"
    async with Static([]) as provider:
        assert provider.get_tools() == []


def test_a_misspelt_builtin_attribute_is_unavailable_with_a_suggestion(registry_snapshot):
    BuiltinToolProvider.register_tool("typo", "jianmu_bt.tools.builtin.files:ReadFileTol")
    reason = BuiltinToolProvider.availability()["typo"]
    assert "not available" in reason and "did you mean 'ReadFileTool'" in reason


def test_a_builtin_reference_to_something_not_callable_is_unavailable(registry_snapshot):
    BuiltinToolProvider.register_tool("constant", "jianmu_bt.tools.base:DEFAULT_NAME")
    reason = BuiltinToolProvider.availability()["constant"]
    assert "not available" in reason and "not a Tool class or factory" in reason


PLUGIN_PROBE = """
import sys
from jianmu_bt.tools import BuiltinToolProvider as registry
calc = registry.build("calculator")
loaded_after_own_name = registry._loaded
shout = registry.build("shout")
print(type(calc).__module__, loaded_after_own_name, shout.name, registry._loaded,
      "shout" in registry.list_builtin_names())
"""


def test_another_distribution_adds_tools_but_cannot_take_over_a_builtin_name(tmp_path):
    # A distribution's metadata, as installing a package with `jianmu.tools` entry points
    # writes it: one new tool and one that claims the built-in calculator's name.
    site = write_distribution(
        tmp_path / "site",
        "jianmu-tools-probe",
        "[jianmu.tools]\ncalculator = probe_tools:Shout\nshout = probe_tools:Shout\n",
    )
    (site / "probe_tools.py").write_text(
        "from jianmu_bt.tools import Tool\n\n"
        "class Shout(Tool):\n"
        "    name = 'shout'\n"
        "    description = 'Upper-case the input.'\n\n"
        "    def run(self, input):\n"
        "        return str(input).upper()\n",
        encoding="utf-8",
    )
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", PLUGIN_PROBE],
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(repo)])},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # The built-in name needed jianmu-bt's own entry points only; the new one read them all.
    assert done.stdout.split() == [
        "jianmu_bt.tools.builtin.calculator",
        "1",
        "shout",
        "2",
        "True",
    ], done.stdout + done.stderr

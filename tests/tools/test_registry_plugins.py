"""Tools other distributions register (`jianmu.tools` entry points): a `@tool` function is a tool,
and one plugin that cannot be built is reported by name, with the reason, and skipped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_distribution import write_distribution

from jianmu_bt.tools import BuiltinToolProvider, FunctionTool, ToolSet
from jianmu_bt.tools.registry import ToolUnavailableError

REPO = Path(__file__).resolve().parents[2]

PLUGINS = '''\
from jianmu_bt.tools import tool


@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


def needs_a_key(api_key):
    """A factory that cannot build its tool without options."""
    raise AssertionError("never built")
'''


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """The plugin module importable, and the registry restored after the test."""
    (tmp_path / "probe_plugins.py").write_text(PLUGINS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    BuiltinToolProvider._ensure_builtins()
    builtins = dict(BuiltinToolProvider._builtins)
    yield
    BuiltinToolProvider._builtins.clear()
    BuiltinToolProvider._builtins.update(builtins)
    sys.modules.pop("probe_plugins", None)


def test_an_entry_point_naming_a_tool_function_gives_that_tool(plugins):
    BuiltinToolProvider.register_tool("shout", "probe_plugins:shout")
    assert BuiltinToolProvider.availability()["shout"] is None
    built = BuiltinToolProvider.build("shout")
    assert isinstance(built, FunctionTool) and built.name == "shout"
    # Options for the configurable built-ins (a workspace) pass it by.
    toolset = ToolSet.resolve(["shout", "calculator"], workspace=".")
    assert toolset.names() == ["shout", "calculator"] and toolset.get("shout") is built


def test_a_factory_that_cannot_be_built_is_unavailable_with_the_reason(plugins):
    BuiltinToolProvider.register_tool("keyed", "probe_plugins:needs_a_key")
    with pytest.raises(ToolUnavailableError, match=r"'keyed' is not available: .*api_key"):
        BuiltinToolProvider.build("keyed")
    # Asked for every built-in, the others still load.
    names = [t.name for t in BuiltinToolProvider().get_tools()]
    assert "calculator" in names and "keyed" not in names


def test_jianmu_tools_reports_a_bad_plugin_and_lists_the_others(tmp_path):
    site = write_distribution(
        tmp_path / "site",
        "jianmu-bad-plugins",
        "[jianmu.tools]\n"
        "shout = probe_plugins:shout\n"
        "keyed = probe_plugins:needs_a_key\n"
        "broken = probe_missing_module:Tool\n",
    )
    (site / "probe_plugins.py").write_text(PLUGINS, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    listed = {}
    for flags in (["--json"], []):
        done = subprocess.run(
            [sys.executable, "-m", "jianmu_bt.cli", "tools", *flags],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "internal error" not in done.stderr
        if flags:
            listed = {entry["name"]: entry for entry in json.loads(done.stdout)}
        else:
            assert "keyed" in done.stdout and "broken" in done.stdout
    assert listed["shout"]["available"] and listed["shout"]["spec"]["name"] == "shout"
    assert listed["calculator"]["available"]
    assert not listed["keyed"]["available"] and "keyed" in listed["keyed"]["reason"]
    assert "api_key" in listed["keyed"]["reason"]
    assert not listed["broken"]["available"]
    assert "probe_missing_module" in listed["broken"]["reason"]

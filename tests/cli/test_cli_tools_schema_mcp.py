"""`jianmu tools`, `jianmu schema`, `jianmu mcp serve`, help texts and the console script."""

import json
import shutil
import subprocess
import sys

import anyio
import pytest
import yaml
from cli_helpers import REPO, TREES, assert_clean_failure, jianmu

from jianmu_bt.cli import build_parser, main
from jianmu_bt.tools import BuiltinToolProvider


def test_tools_lists_every_builtin_with_availability_and_parameters():
    result = jianmu("tools")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    availability = BuiltinToolProvider.availability()
    ready = sum(1 for reason in availability.values() if reason is None)
    assert out.startswith(f"built-in tools ({ready} of {len(availability)} available here):")
    for name in availability:
        assert f"\n  {name}" in out
    assert "  read_file  (aliases: file_read)" in out
    assert "parameters: expression: string" in out


def test_tools_json_gives_full_schemas(capsys):
    assert main(["tools", "--json"]) == 0
    entries = {e["name"]: e for e in json.loads(capsys.readouterr().out)}
    calculator = entries["calculator"]
    assert calculator["available"] and calculator["spec"]["parameters"]["required"] == [
        "expression"
    ]
    assert set(entries) == set(BuiltinToolProvider.list_builtin_names())


def test_a_builtin_whose_optional_package_is_missing_is_reported_unavailable(capsys, monkeypatch):
    # As without the search extra: neither package can be imported.
    for package in ("ddgs", "duckduckgo_search"):
        monkeypatch.setitem(sys.modules, package, None)
    assert main(["tools"]) == 0
    out = capsys.readouterr().out
    total = len(BuiltinToolProvider.list_builtin_names())
    assert out.startswith(f"built-in tools ({total - 1} of {total} available here):")
    assert "duckduckgo_search  [unavailable]" in out
    assert "pip install 'jianmu-bt[search]'" in out


def test_tools_of_a_tree_are_the_ones_it_configures(capsys):
    assert main(["tools", str(TREES / "file_audit.yaml")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("tools of tree 'file_audit' (4):")
    listed = [
        line.strip()
        for line in out.splitlines()
        if line.startswith("  ") and not line.startswith("    ")
    ]
    assert listed == ["glob_search", "grep_search", "read_file", "list_dir"]


def test_tools_of_a_missing_tree_is_a_clear_error(capsys):
    assert main(["tools", "missing.yaml"]) == 1
    assert "missing.yaml: no such tree file" in capsys.readouterr().err


def test_schema_is_json_schema_that_accepts_the_shipped_trees(tmp_path, capsys):
    jsonschema = pytest.importorskip("jsonschema")
    target = tmp_path / "tree.schema.json"
    assert main(["schema", "-o", str(target)]) == 0
    schema = json.loads(target.read_text())
    assert schema["$schema"].startswith("https://json-schema.org/")
    validator = jsonschema.Draft202012Validator(schema)
    for tree in sorted(TREES.glob("*.yaml")):
        errors = list(validator.iter_errors(yaml.safe_load(tree.read_text())))
        assert errors == [], (tree.name, [e.message for e in errors])
    assert list(validator.iter_errors({"version": 1, "root": {"sequense": {}}}))
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == schema


def test_mcp_serve_over_stdio_answers_a_real_client():
    from jianmu_bt.mcp import MCPClient, MCPServerConfig

    config = MCPServerConfig(
        command=sys.executable,
        args=["-m", "jianmu_bt.cli", "mcp", "serve", "--tools", "calculator"],
        env={"PYTHONPATH": str(REPO)},
        cwd=str(REPO),
        timeout=20,
        connect_timeout=30,
    )

    async def session():
        async with MCPClient.from_config(config) as client:
            names = [t.name for t in await client.list_tools()]
            result = await client.call_tool("calculator", {"expression": "17 * 23"})
            return names, result

    names, result = anyio.run(session)
    assert names == ["calculator"]
    assert "391" in str(result)


def test_mcp_serve_with_an_unknown_tool_exits_1():
    result = jianmu("mcp", "serve", "--tools", "calculater")
    assert_clean_failure(result, "unknown tool 'calculater'")


@pytest.mark.parametrize("command", ["run", "validate", "dot", "tools", "schema"])
def test_every_command_has_help_with_examples(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and f"jianmu {command}" in out


def test_top_level_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in ("run", "validate", "dot", "tools", "schema", "mcp"):
        assert f"\n    {command} " in out


@pytest.mark.skipif(shutil.which("jianmu") is None, reason="the package is not installed")
def test_the_console_script_is_installed():
    result = subprocess.run(
        ["jianmu", "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0 and result.stdout.startswith("jianmu ")

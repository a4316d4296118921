"""All ten built-ins via `ToolSet.resolve`: construction, options, schemas, a scripted session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SECRET, Layout, Servers

from jianmu_bt.tools import BuiltinToolProvider, ToolCall, ToolSet
from jianmu_bt.tools.builtin import (
    CalculatorTool,
    DuckDuckGoSearchTool,
    FileInfoTool,
    GlobSearchTool,
    GrepSearchTool,
    HTTPRequestTool,
    ListDirTool,
    ReadFileTool,
    StrReplaceTool,
    WriteFileTool,
)

TEN = {
    "read_file": (ReadFileTool, ("file_read",), True),
    "write_file": (WriteFileTool, ("file_write",), False),
    "list_dir": (ListDirTool, ("file_read",), True),
    "file_info": (FileInfoTool, ("file_read",), True),
    "str_replace": (StrReplaceTool, ("file_read", "file_write"), False),
    "glob_search": (GlobSearchTool, ("file_read",), True),
    "grep_search": (GrepSearchTool, ("file_read",), True),
    "calculator": (CalculatorTool, (), True),
    "http_request": (HTTPRequestTool, ("http",), True),
    "duckduckgo_search": (DuckDuckGoSearchTool, ("web_search",), True),
}


def test_resolve_builds_all_ten_with_truthful_effects(tmp_path: Path) -> None:
    tools = ToolSet.resolve(list(TEN), workspace=tmp_path)
    assert tools.names() == list(TEN)
    for name, (cls, effects, parallel_safe) in TEN.items():
        built = tools[name]
        assert type(built) is cls
        assert built.effect_tags == effects
        assert built.parallel_safe is parallel_safe
    for name in ["read_file", "write_file", "grep_search", "glob_search", "str_replace"]:
        assert tools[name].workspace.root == tmp_path.resolve()


def test_every_constructor_works_without_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for cls, _effects, _safe in TEN.values():
        assert cls().name in TEN
    assert BuiltinToolProvider.availability()["read_file"] is None


def test_aliases_resolve_to_the_builtins(tmp_path: Path) -> None:
    tools = ToolSet.resolve(
        ["file_read", "file_write", "ls", "glob", "grep", "http", "web_search"],
        workspace=tmp_path,
    )
    assert tools.names() == [
        "read_file",
        "write_file",
        "list_dir",
        "glob_search",
        "grep_search",
        "http_request",
        "duckduckgo_search",
    ]


def test_options_reach_the_tools_that_take_them(tmp_path: Path) -> None:
    class Backend:
        def search(self, query, *, max_results, region, safesearch, timeout):
            return []

    backend = Backend()
    tools = ToolSet.resolve(
        ["http_request", "duckduckgo_search", "read_file"],
        workspace=tmp_path,
        allow_private=True,
        search_backend=backend,
    )
    assert tools["http_request"].policy.allow_private is True
    assert tools["duckduckgo_search"].backend is backend


@pytest.mark.parametrize("name", list(TEN))
def test_each_schema_is_an_object_with_described_properties(name: str, tmp_path: Path) -> None:
    built = ToolSet.resolve([name], workspace=tmp_path)[name]
    schema = built.to_schema()
    params = schema["parameters"]
    assert schema["name"] == name and len(schema["description"]) > 30
    assert params["type"] == "object" and params["properties"]
    assert params.get("additionalProperties") is False
    for prop_name, prop in params["properties"].items():
        assert prop.get("description"), f"{name}.{prop_name} has no description"
    assert set(params.get("required", [])) <= set(params["properties"])
    spec = built.spec()
    assert spec["output_schema"]["description"]
    assert spec["effects"] == list(TEN[name][1])
    json.dumps(schema)  # JSON-ready, as an LLM API needs it


@pytest.mark.anyio
async def test_a_scripted_agent_session_stays_inside_its_workspace(
    layout: Layout, servers: Servers
) -> None:
    """An LLM's tool calls, as a provider would hand them over, one after another."""
    server = servers.start()
    server.routes["/data"] = lambda h: h.reply_json({"value": 17})
    tools = ToolSet.resolve(list(TEN), workspace=layout.root, allowed_networks=["127.0.0.1/32"])
    script = [
        ("list_dir", {}, True),
        ("write_file", {"path": "notes/plan.md", "content": "step one\nstep two\n"}, True),
        ("str_replace", {"path": "notes/plan.md", "old_str": "two", "new_str": "2"}, True),
        ("read_file", {"path": "notes/plan.md"}, True),
        ("grep_search", {"pattern": r"^step"}, True),
        ("glob_search", {"pattern": "**/*.md"}, True),
        ("http_request", {"url": f"{server.url}/data"}, True),
        ("calculator", {"expression": "17 * 23"}, True),
        ("read_file", {"path": "link_dir/secret.txt"}, False),
        ("write_file", {"path": "../outside/pwn.txt", "content": "x"}, False),
        ("http_request", {"url": "http://169.254.169.254/latest/meta-data/"}, False),
        ("calculator", {"expression": "9**9**9"}, False),
    ]
    before = layout.outside_snapshot()
    outputs = []
    for index, (name, args, should_work) in enumerate(script):
        call = ToolCall.from_dict(
            {
                "id": f"call_{index}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        )
        result = await tools.call(call)
        assert result.ok is should_work, (name, result.error)
        assert SECRET not in result.content
        outputs.append(result.output)
    assert outputs[3] == "step one\nstep 2\n"
    assert outputs[4]["matches"] == ["notes/plan.md:1: step one", "notes/plan.md:2: step 2"]
    assert "notes/plan.md" in outputs[5]["matches"]
    assert json.loads(outputs[6]["body"]) == {"value": 17}
    assert outputs[7] == "391"
    assert layout.outside_snapshot() == before


@pytest.mark.parametrize("name", list(TEN))
def test_sandbox_kwargs_rebuild_an_equivalent_tool_from_json(name: str, tmp_path: Path) -> None:
    """A sandbox re-creates a class tool from `sandbox_kwargs()` sent as JSON."""
    original = ToolSet.resolve([name], workspace=tmp_path, allowed_networks=["127.0.0.1/32"])[name]
    kwargs = json.loads(json.dumps(original.sandbox_kwargs()))
    copy = type(original)(**kwargs)
    assert copy.to_schema() == original.to_schema()
    if hasattr(original, "workspace"):
        assert copy.workspace.root == original.workspace.root
    if name == "http_request":
        assert copy.policy == original.policy
    if name == "calculator":
        assert copy.calculator.limits == original.calculator.limits


def test_a_custom_search_backend_cannot_go_into_a_sandbox() -> None:
    class Backend:
        def search(self, query, *, max_results, region, safesearch, timeout):
            return []

    with pytest.raises(ValueError, match="custom search_backend"):
        DuckDuckGoSearchTool(search_backend=Backend()).sandbox_kwargs()

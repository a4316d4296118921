"""ToolSet: ordering, lookup, immutable composition, execution and batch helpers."""

import pytest

from jianmu_bt.tools import Tool, ToolCall, ToolResult, ToolSet, tool


def make(name, parallel_safe=True, description=None):
    @tool(name=name, parallel_safe=parallel_safe, description=description or f"{name} tool")
    def fn(x: int = 0) -> str:
        return f"{name}:{x}"

    return fn


def test_last_wins_and_keeps_first_position():
    first, second, replacement = (
        make("a", description="old"),
        make("b"),
        make("a", description="new"),
    )
    toolset = ToolSet.from_tools([first, second, replacement])
    assert toolset.names() == ["a", "b"]
    assert toolset.get("a") is replacement


def test_get_is_case_insensitive_and_returns_none_when_missing():
    toolset = ToolSet.from_tools([make("Mixed")])
    assert toolset.get("mixed") is toolset.get("MIXED") is not None
    assert toolset.get("absent") is None
    assert "MIXED" in toolset and "absent" not in toolset


def test_merge_and_with_tools_return_new_sets():
    base = ToolSet.from_tools([make("a")])
    merged = base.merge(ToolSet.from_tools([make("b")]), [make("c")])
    extended = base.with_tools([make("d")])
    assert base.names() == ["a"]
    assert merged.names() == ["a", "b", "c"]
    assert extended.names() == ["a", "d"]


def test_toolset_only_holds_tools():
    with pytest.raises(TypeError, match="Tool instances"):
        ToolSet.from_tools(["calculator"])  # type: ignore[list-item]


def test_describe_schemas_specs():
    toolset = ToolSet.from_tools([make("a"), make("b")])
    assert toolset.describe() == "- a: a tool\n- b: b tool"
    assert [s["name"] for s in toolset.schemas()] == ["a", "b"]
    assert [s["name"] for s in toolset.specs()] == ["a", "b"]
    assert len(toolset) == 2 and [t.name for t in toolset] == ["a", "b"]


def test_is_parallel_safe():
    toolset = ToolSet.from_tools([make("safe"), make("unsafe", parallel_safe=False)])
    assert toolset.is_parallel_safe(["safe"])
    assert not toolset.is_parallel_safe(["safe", "unsafe"])
    assert not toolset.is_parallel_safe(["missing"])
    assert toolset.is_parallel_safe([])


def test_subset_and_unknown_name():
    toolset = ToolSet.from_tools([make("a"), make("b")])
    assert toolset.subset(["B"]).names() == ["b"]
    with pytest.raises(KeyError, match="no tool named 'z'"):
        toolset.subset(["z"])


@pytest.mark.anyio
async def test_execute_runs_and_raises_keyerror_for_unknown():
    toolset = ToolSet.from_tools([make("a")])
    assert await toolset.execute("A", {"x": 3}) == "a:3"
    with pytest.raises(KeyError, match="available tools: a"):
        await toolset.execute("nope", {})


@pytest.mark.anyio
async def test_call_never_raises_and_accepts_toolcalls():
    toolset = ToolSet.from_tools([make("a")])
    assert await toolset.call(ToolCall("a", {"x": 1})) == ToolResult("a", True, "a:1")
    unknown = await toolset.call("ghost", {})
    assert not unknown.ok and "unknown tool 'ghost'" in unknown.error


@pytest.mark.anyio
async def test_malformed_json_arguments_become_an_actionable_error():
    toolset = ToolSet.from_tools([make("a")])
    call = ToolCall.from_dict({"name": "a", "arguments": '{"x": '})
    result = await toolset.call(call)
    assert not result.ok and "x" in result.error


@pytest.mark.anyio
async def test_odd_return_shapes_are_normalised():
    class Odd(Tool):
        name = "odd"
        input_schema = {"type": "object", "properties": {"kind": {"type": "string"}}}

        def run(self, input):
            return {"none": None, "set": {1}, "fail": {"ok": False}}[input["kind"]]

    toolset = ToolSet.from_tools([Odd()])
    assert (await toolset.call("odd", {"kind": "none"})).ok
    odd_set = await toolset.call("odd", {"kind": "set"})
    assert odd_set.ok and "{1}" in odd_set.content
    assert not (await toolset.call("odd", {"kind": "fail"})).ok


@pytest.mark.anyio
async def test_toolset_runner_is_used_unless_overridden():
    class Tagging:
        def __init__(self, tag):
            self.tag = tag

        async def run(self, tool, args):
            return f"{self.tag}:{tool.name}"

    toolset = ToolSet.from_tools([make("a")], runner=Tagging("set"))
    assert await toolset.execute("a", {}) == "set:a"
    assert await toolset.execute("a", {}, runner=Tagging("call")) == "call:a"
    assert await toolset.with_runner(None).execute("a", {}) == "a:0"

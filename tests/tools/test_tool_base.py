"""The Tool base class: attributes, execute, runners, schemas, descriptions."""

import threading

import anyio
import pytest

from jianmu_bt.sandbox import InProcessRunner
from jianmu_bt.tools import DEFAULT_DESCRIPTION, Tool, ToolResult, normalize_parameters


class Echo(Tool):
    name = "echo"

    def run(self, input):
        return input


class Documented(Tool):
    """Reverses text."""

    name = "reverse"

    def run(self, input):
        return input[::-1]


class Explicit(Tool):
    """Docstring loses."""

    name = "explicit"
    description = "Explicit wins."

    def run(self, input):
        return input


class ObjectTool(Tool):
    name = "obj"
    input_schema = {"type": "object", "properties": {"x": {"type": "integer"}}}

    def run(self, input):
        return input


class AsyncTool(Tool):
    name = "async_tool"

    async def run(self, input):
        await anyio.sleep(0)
        return f"async:{input}"


class ThreadReporter(Tool):
    name = "thread"

    def run(self, input):
        return threading.current_thread().name


class Raises(Tool):
    name = "raises"

    def run(self, input):
        raise ValueError("nope")


class Slow(Tool):
    name = "slow"

    async def run(self, input):
        await anyio.sleep(10)


def test_class_attribute_defaults():
    class Bare(Tool):
        def run(self, input):
            return input

    bare = Bare()
    assert bare.name == "unnamed_tool"
    assert bare.description == DEFAULT_DESCRIPTION
    assert bare.input_schema["type"] == "string"
    assert bare.output_schema["type"] == "string"
    assert bare.parallel_safe is True
    assert bare.effect_tags == ()


def test_tool_is_abstract():
    with pytest.raises(TypeError):
        Tool()  # type: ignore[abstract]


def test_description_fallback_order():
    assert Explicit().get_description() == "Explicit wins."
    assert Documented().get_description() == "Reverses text."
    assert Echo().get_description() == ""  # the base class docstring is not inherited


def test_to_schema_wraps_non_object_input():
    schema = Echo().to_schema()
    assert schema["parameters"] == {
        "type": "object",
        "properties": {"input": Echo.input_schema},
        "required": ["input"],
    }


def test_to_schema_passes_object_input_through():
    assert ObjectTool().to_schema()["parameters"]["properties"] == {"x": {"type": "integer"}}
    assert normalize_parameters({"type": "object"}) == {"type": "object", "properties": {}}


def test_spec_has_effects_and_parallel_safety():
    spec = Documented().spec()
    assert spec["name"] == "reverse"
    assert spec["effects"] == [] and spec["parallel_safe"] is True
    assert spec["input_schema"]["type"] == "string"
    assert spec["parameters"]["type"] == "object"
    assert spec["output_schema"]["type"] == "string"


@pytest.mark.anyio
async def test_execute_unwraps_wrapped_input():
    assert await Echo().execute({"input": "hi"}) == "hi"
    assert await Echo().execute("bare") == "bare"


@pytest.mark.anyio
async def test_injected_values_win_by_default():
    tool = ObjectTool()
    assert await tool.execute({"x": 1}, injected={"x": 2}) == {"x": 2}
    assert await tool.execute({"x": 1}, injected={"x": 2}, prefer_injected=False) == {"x": 1}
    assert await tool.execute(None, injected={"y": 3}) == {"y": 3}


@pytest.mark.anyio
async def test_injection_ignored_for_non_dict_args():
    assert await Echo().execute("text", injected={"x": 1}) == "text"


@pytest.mark.anyio
async def test_async_run_is_awaited():
    assert await AsyncTool().execute("a") == "async:a"


@pytest.mark.anyio
async def test_sync_run_goes_to_a_worker_thread():
    assert await ThreadReporter().execute("") != threading.current_thread().name


@pytest.mark.anyio
async def test_non_blocking_sync_run_stays_on_the_loop():
    tool = ThreadReporter()
    tool.blocking = False
    assert await tool.execute("") == threading.current_thread().name


@pytest.mark.anyio
async def test_runner_receives_merged_arguments():
    seen = []

    class Recording:
        async def run(self, tool, args):
            seen.append((tool.name, args))
            return "from runner"

    result = await ObjectTool().execute({"x": 1}, injected={"y": 2}, runner=Recording())
    assert result == "from runner"
    assert seen == [("obj", {"x": 1, "y": 2})]


@pytest.mark.anyio
async def test_in_process_runner_runs_locally():
    assert await Echo().execute("z", runner=InProcessRunner()) == "z"


@pytest.mark.anyio
async def test_object_tool_refuses_non_object_arguments():
    result = await ObjectTool().execute("not json")
    assert isinstance(result, ToolResult) and not result.ok
    assert "JSON object" in result.error


@pytest.mark.anyio
async def test_execute_propagates_but_call_captures_exceptions():
    with pytest.raises(ValueError):
        await Raises().execute("x")
    result = await Raises().call("x")
    assert not result.ok and result.error == "Error: ValueError: nope"


@pytest.mark.anyio
async def test_call_timeout_returns_error_quickly():
    with anyio.fail_after(5):
        result = await Slow().call("x", timeout=0.05)
    assert not result.ok and "timed out after 0.05s" in result.error


@pytest.mark.anyio
async def test_call_normalises_error_strings():
    class Failing(Tool):
        name = "failing"

        def run(self, input):
            return "Error: disk full"

    result = await Failing().call("x")
    assert result == ToolResult("failing", False, None, "Error: disk full")


def test_as_node_loads_the_tree_layer_through_its_entry_point(monkeypatch):
    import jianmu_bt.tools.node_factory as bridge

    monkeypatch.setattr(bridge, "_node_factory", None)
    node = Echo().as_node(name="Echo", output_key="said")
    assert type(node).__name__ == "ToolNode"
    assert (node.name, node.output_key) == ("Echo", "said")


def test_as_node_without_tree_layer_is_a_clear_error(monkeypatch):
    import jianmu_bt.tools.node_factory as bridge

    monkeypatch.setattr(bridge, "_node_factory", None)
    monkeypatch.setattr(bridge, "load_tool_node_factory", lambda: None)
    with pytest.raises(RuntimeError, match=r"tree layer.*entry points are missing"):
        Echo().as_node()


def test_callers_have_one_way_to_run_a_tool():
    # `call` (plus `execute`, its raw form, and `execute_local`, the runner hook); the helpers
    # behind them are private.
    for gone in (
        "call_tool_call",
        "blocking_work",
        "prepare_input",
        "merge_args",
        "runs_in_a_thread",
        "to_result",
        "error_result",
    ):
        assert not hasattr(Tool, gone), gone


@pytest.mark.anyio
async def test_call_and_execute_take_the_same_path_to_a_runner():
    seen = []

    class Recording:
        async def run(self, tool, args):
            seen.append(args)
            return "Error: refused by the runner"

    runner = Recording()
    raw = await ObjectTool().execute({"x": 1}, injected={"y": 2}, runner=runner)
    result = await ObjectTool().call({"x": 1}, injected={"y": 2}, runner=runner)
    assert raw == "Error: refused by the runner"
    assert result == ToolResult("obj", False, None, "Error: refused by the runner")
    assert seen == [{"x": 1, "y": 2}, {"x": 1, "y": 2}]


@pytest.mark.anyio
async def test_a_subclass_that_overrides_execute_routes_call_through_it():
    class Routed(Echo):
        async def execute(self, args=None, injected=None, runner=None, prefer_injected=True):
            return f"routed {await super().execute(args, injected, runner, prefer_injected)}"

    assert await Routed().execute("a") == "routed a"
    assert (await Routed().call("b")).output == "routed b"
    assert (await Echo().call("c")).output == "c"

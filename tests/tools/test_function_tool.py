"""@tool: schemas derived from type hints and docstrings, validation, injection, concurrency."""

import enum
import threading
from typing import Annotated, Literal

import anyio
import pytest
from pydantic import BaseModel

from jianmu_bt.tools import FunctionTool, Injected, ToolResult, ToolSet, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


def test_decorated_function_is_a_callable_tool():
    assert isinstance(add, FunctionTool)
    assert add(2, 3) == 5
    assert add.name == "add"
    assert add.__name__ == "add"


def test_schema_is_derived_from_type_hints_and_google_docstring():
    schema = add.to_schema()
    assert schema["description"] == "Add two integers."
    params = schema["parameters"]
    assert params["type"] == "object"
    assert params["properties"] == {
        "a": {"type": "integer", "description": "The first addend."},
        "b": {"type": "integer", "description": "The second addend."},
    }
    assert params["required"] == ["a", "b"]
    assert add.output_schema["type"] == "integer"


def test_numpy_docstring_descriptions():
    @tool
    def scale(value: float, factor: float = 2.0) -> float:
        """Scale a value.

        Parameters
        ----------
        value : float
            The value to scale.
        factor : float
            How much.
        """
        return value * factor

    props = scale.to_schema()["parameters"]["properties"]
    assert props["value"]["description"] == "The value to scale."
    assert props["factor"] == {"type": "number", "description": "How much.", "default": 2.0}
    assert scale.to_schema()["parameters"]["required"] == ["value"]


def test_sphinx_docstring_descriptions():
    @tool
    def greet(name: str) -> str:
        """Greet someone.

        :param name: Who to greet.
        :returns: A greeting.
        """
        return f"hi {name}"

    assert greet.to_schema()["parameters"]["properties"]["name"]["description"] == "Who to greet."
    assert greet.output_schema["description"] == "A greeting."


class Mode(enum.Enum):
    FAST = "fast"
    SAFE = "safe"


class Point(BaseModel):
    x: int
    y: int


def test_optional_enum_literal_nested_model_and_list_parameters():
    @tool
    def plot(
        points: list[Point], mode: Mode, unit: Literal["cm", "in"] = "cm", label: str | None = None
    ):
        """Plot points."""
        return len(points)

    params = plot.to_schema()["parameters"]
    assert params["required"] == ["points", "mode"]
    assert params["properties"]["points"]["type"] == "array"
    assert params["properties"]["unit"]["enum"] == ["cm", "in"]
    assert "Point" in params["$defs"] and "Mode" in params["$defs"]
    assert {"type": "null"} in params["properties"]["label"]["anyOf"]


@pytest.mark.anyio
async def test_arguments_are_validated_and_coerced_into_models():
    @tool
    def plot(points: list[Point], mode: Mode) -> str:
        """Plot points."""
        assert isinstance(points[0], Point) and isinstance(mode, Mode)
        return f"{len(points)} {mode.value}"

    result = await plot.call({"points": [{"x": 1, "y": "2"}], "mode": "fast"})
    assert result.ok and result.output == "1 fast"


@pytest.mark.anyio
async def test_wrong_type_names_the_argument():
    result = await add.call({"a": "one", "b": 2})
    assert not result.ok
    assert "invalid arguments for tool 'add'" in result.error
    assert "a: Input should be a valid integer" in result.error
    assert "'one'" in result.error


@pytest.mark.anyio
async def test_missing_and_unexpected_arguments_are_named():
    result = await add.call({"a": 1, "c": 3})
    assert "b: missing required argument" in result.error
    assert "c: unexpected argument" in result.error


@pytest.mark.anyio
async def test_validation_failure_never_escapes_execute():
    raw = await add.execute({"a": []})
    assert isinstance(raw, ToolResult) and not raw.ok


@pytest.mark.anyio
async def test_non_object_arguments_for_multi_parameter_tool():
    result = await add.call("1, 2")
    assert not result.ok and "expects a JSON object with a, b" in result.error


@pytest.mark.anyio
async def test_single_parameter_tool_accepts_a_bare_value():
    @tool
    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    assert (await shout.call("hey")).output == "HEY"
    assert (await shout.call({"text": "yo"})).output == "YO"


@pytest.mark.anyio
async def test_explicit_string_schema_receives_the_wrapped_input():
    @tool(name="calc", input_schema={"type": "string", "description": "expression"})
    def calc(expression: str) -> str:
        return expression

    assert calc.to_schema()["parameters"]["required"] == ["input"]
    assert (await calc.call({"input": "1+1"})).output == "1+1"


def test_decorator_options_are_applied():
    @tool(
        name="Writer",
        description="Writes things.",
        parallel_safe=False,
        effect_tags=["file_write"],
        timeout=3,
    )
    def write(path: str) -> None:
        """Ignored docstring."""

    assert write.name == "Writer"
    assert write.get_description() == "Writes things."
    assert write.parallel_safe is False
    assert write.effect_tags == ("file_write",)
    assert write.timeout == 3


def test_function_without_docstring_has_empty_description():
    @tool
    def bare(x: int) -> int:
        return x

    assert bare.get_description() == ""


@pytest.mark.anyio
async def test_injected_parameter_is_hidden_and_passed():
    @tool
    def whoami(greeting: str, user_id: Annotated[str, Injected]) -> str:
        """Say hello to the current user."""
        return f"{greeting} {user_id}"

    params = whoami.to_schema()["parameters"]
    assert list(params["properties"]) == ["greeting"]
    result = await whoami.call({"greeting": "hi", "user_id": "forged"}, injected={"user_id": "u1"})
    assert result.output == "hi u1"


@pytest.mark.anyio
async def test_injected_by_name_and_missing_injected_value():
    @tool(injected=["session"])
    def fetch(key: str, session: str) -> str:
        """Fetch."""
        return f"{session}:{key}"

    assert "session" not in fetch.to_schema()["parameters"]["properties"]
    missing = await fetch.call({"key": "k", "session": "llm-supplied"})
    assert not missing.ok and "session: missing injected value" in missing.error
    assert (await fetch.call({"key": "k"}, injected={"session": "s"})).output == "s:k"


def test_unknown_injected_name_is_refused_at_build_time():
    with pytest.raises(TypeError, match="not parameters"):

        @tool(injected=["nope"])
        def f(a: int) -> int:
            return a


def test_unschemable_parameter_type_is_a_clear_build_error():
    class Opaque:
        pass

    with pytest.raises(TypeError, match="cannot derive a JSON schema"):

        @tool
        def f(thing: Opaque) -> None:
            """x"""


def test_signature_work_happens_once_at_build_time(monkeypatch):
    import jianmu_bt.tools.signature as signature

    calls = []
    original = signature.FunctionSignature.from_function
    monkeypatch.setattr(
        signature.FunctionSignature,
        "from_function",
        classmethod(lambda cls, fn, injected=(): calls.append(fn) or original(fn, injected)),
    )

    @tool
    def mul(a: int, b: int) -> int:
        """Multiply."""
        return a * b

    async def run_many():
        for _ in range(5):
            await mul.call({"a": 2, "b": 3})

    anyio.run(run_many)
    assert len(calls) == 1


@pytest.mark.anyio
async def test_async_function_tool_is_awaited():
    @tool
    async def later(x: int) -> int:
        """Later."""
        await anyio.sleep(0)
        return x * 2

    assert (await later.call({"x": 4})).output == 8


@pytest.mark.anyio
async def test_sync_tools_run_in_worker_threads_concurrently():
    barrier = threading.Barrier(4, timeout=5)  # passes only if all four calls run at once
    idents = set()

    @tool
    def blocking() -> str:
        """Block the calling thread until all four calls arrive."""
        idents.add(threading.get_ident())
        barrier.wait()
        return "done"

    results = []

    async def one():
        results.append(await blocking.call({}))

    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(one)
    assert [r.error for r in results] == [None] * 4
    assert threading.get_ident() not in idents and len(idents) == 4


@pytest.mark.anyio
async def test_positional_only_parameters_are_supported():
    @tool
    def power(base: int, /, exponent: int = 2) -> int:
        """Power."""
        return base**exponent

    assert (await power.call({"base": 3, "exponent": 3})).output == 27


@pytest.mark.anyio
async def test_variadic_kwargs_function_receives_everything():
    @tool
    def collect(**options) -> dict:
        """Collect options."""
        return options

    assert collect.to_schema()["parameters"]["additionalProperties"] is True
    assert (await collect.call({"a": 1})).output == {"a": 1}


@pytest.mark.anyio
async def test_tool_in_toolset_with_builtin_names_user_flow():
    toolset = ToolSet.from_tools([add])
    assert toolset.schemas()[0]["name"] == "add"
    assert await toolset.execute("add", {"a": 2, "b": 5}) == 7

"""The seed's contract: `FunctionTool.run` of an async function is a coroutine function."""

from __future__ import annotations

import inspect

import anyio

from jianmu_bt.tools import tool
from jianmu_bt.tools.function_tool import FunctionTool


@tool
async def add_async(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def add_sync(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_run_of_an_async_tool_is_a_coroutine_function() -> None:
    assert inspect.iscoroutinefunction(add_async.run)
    assert anyio.run(add_async.run, 2, 3) == 5


def test_run_of_a_sync_tool_is_not() -> None:
    assert not inspect.iscoroutinefunction(add_sync.run)
    assert add_sync.run(2, 3) == 5


def test_async_calls_still_validate_and_run_on_the_loop() -> None:
    async def main() -> None:
        result = await add_async.call({"a": 1, "b": 2})
        assert result.ok and result.output == 3
        bad = await add_async.call({"a": "x", "b": 2})
        assert not bad.ok and "invalid arguments" in (bad.error or "")

    anyio.run(main)
    # The class-level decision is untouched: only the instance's `run` differs.
    assert not FunctionTool._run_is_async
    assert add_async._run_is_async and not add_sync._run_is_async
    assert not add_async._runs_in_a_thread

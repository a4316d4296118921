"""The loader's public seams: its keyword options, a tree's providers, the blocking twins."""

import inspect

import anyio
import pytest
from py_trees.common import Status
from test_api import PROVIDED, CountingProvider, shout

from jianmu_bt.loader import LoadOptions, Tree, load_tree, validate_source

SIMPLE = """
state: {total: integer}
root:
  sequence:
    children:
      - set: {values: {total: 3}}
      - condition: {check: "total == 3"}
"""


@pytest.mark.parametrize("function", [load_tree, validate_source])
def test_an_unknown_option_is_refused_by_name(function):
    with pytest.raises(TypeError, match=r"got an unexpected keyword argument 'tool'"):
        function(SIMPLE, tool=[shout])


def test_the_options_are_one_typed_dict():
    assert LoadOptions.__optional_keys__ == {
        "tools",
        "providers",
        "llm",
        "guard",
        "base_dir",
        "check",
    }


def test_a_trees_providers_open_and_close_outside_a_run():
    provider = CountingProvider()
    with load_tree(PROVIDED, providers=[provider]) as tree:
        assert tree.providers.needed and not tree.providers.is_open
        assert tree.toolset.get("shout") is None  # known once the provider started

        async def use() -> None:
            await tree.providers.open()
            try:
                assert tree.toolset.get("shout") is shout
            finally:
                await tree.providers.close()

        anyio.run(use)
        assert (provider.started, provider.closed) == (1, 1)
        assert not tree.providers.is_open


def test_run_is_the_blocking_twin_of_arun():
    assert inspect.signature(Tree.run) == inspect.signature(Tree.arun)
    assert inspect.signature(Tree.resume) == inspect.signature(Tree.aresume)
    assert not inspect.iscoroutinefunction(Tree.run)
    assert Tree.run.__name__ == "run" and "Blocking form of `arun`" in (Tree.run.__doc__ or "")


def test_run_after_ticks_uses_the_tick_loop():
    with load_tree(SIMPLE) as tree:
        status = tree.tick()
        assert status == Status.SUCCESS
        result = tree.run(timeout=10)  # runs in the loop that tick() started
        assert result.ok and result.state["total"] == 3

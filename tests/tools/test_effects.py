"""What a tool declares about its effects: `read_only`, the contradiction with write tags, what a
crash and the guard make of a tool that declares nothing (`jianmu_bt.tools.effects`)."""

from __future__ import annotations

from typing import Any

import pytest

from jianmu_bt import Tool, ToolSet, tool
from jianmu_bt.tools import (
    UNKNOWN_EFFECT,
    BuiltinToolProvider,
    EffectDeclarationError,
    FunctionTool,
    counted_effects,
)
from jianmu_bt.tools.effects import fits_read_only, may_run_again


def double(x: int) -> int:
    """Double a number."""
    return 2 * x


# -- declaring --------------------------------------------------------------------------------


def test_a_tool_is_not_read_only_unless_it_says_so() -> None:
    assert Tool.read_only is False
    assert tool(double).read_only is False
    assert tool(read_only=True)(double).read_only is True
    assert FunctionTool(double, read_only=True).read_only is True


def test_the_spec_says_whether_a_tool_is_read_only_and_idempotent() -> None:
    spec = tool(read_only=True)(double).spec()
    assert (spec["read_only"], spec["idempotent"]) == (True, False)
    spec = tool(effect_tags=["ledger"], idempotent=True)(double).spec()
    assert (spec["read_only"], spec["idempotent"]) == (False, True)


@pytest.mark.parametrize(
    "tags",
    [(), ("file_read",), ("read",), ("web_search",), ("search",), ("http",), ("open_world",)],
)
def test_a_read_only_tool_may_carry_read_and_reach_tags(tags: tuple[str, ...]) -> None:
    made = tool(read_only=True, effect_tags=tags)(double)
    assert made.effect_tags == tags and made.read_only


@pytest.mark.parametrize(
    "tags",
    [("file_write",), ("exec",), ("payments",), ("file_read", "file_delete"), ("web_write",)],
)
def test_a_read_only_tool_with_a_write_tag_is_refused_when_it_is_made(
    tags: tuple[str, ...],
) -> None:
    with pytest.raises(EffectDeclarationError, match=r"tool 'double' is declared read_only=True"):
        tool(read_only=True, effect_tags=tags)(double)
    with pytest.raises(ValueError, match=repr(tags[-1])):  # an EffectDeclarationError is one
        FunctionTool(double, read_only=True, effect_tags=iter(tags))


def test_a_tool_class_declaring_both_is_refused_when_it_is_defined() -> None:
    with pytest.raises(EffectDeclarationError, match=r"'send_mail'.*'email_send'"):

        class SendMail(Tool):
            name = "send_mail"
            read_only = True
            effect_tags = ("email_send",)

            def run(self, input: Any) -> Any:
                return input


def test_a_tool_made_read_only_after_it_was_made_is_refused_by_a_toolset() -> None:
    made = tool(effect_tags=["file_write"])(double)
    made.read_only = True
    with pytest.raises(EffectDeclarationError, match="'file_write'"):
        ToolSet([made])


def test_only_reads_and_places_fit_a_read_only_tool() -> None:
    assert all(map(fits_read_only, ["file_read", "READ", "web_search", "net", "https"]))
    assert not any(map(fits_read_only, ["file_write", "net_write", "exec", "unknown", "ledger"]))


# -- what a run makes of it ---------------------------------------------------------------------


def test_only_read_only_or_idempotent_tools_may_run_again_after_a_crash() -> None:
    assert may_run_again(tool(read_only=True)(double))
    assert may_run_again(tool(idempotent=True)(double))
    assert may_run_again(tool(effect_tags=["ledger"], idempotent=True)(double))
    assert not may_run_again(tool(double)), "a tool that declares nothing has unknown effects"
    assert not may_run_again(tool(effect_tags=["ledger"])(double))
    assert not may_run_again(tool(effect_tags=["file_read"])(double)), "tags are not a promise"


def test_the_guard_counts_unknown_for_a_tool_that_declares_no_effects() -> None:
    assert counted_effects(tool(double)) == (UNKNOWN_EFFECT,) == ("unknown",)
    assert counted_effects(tool(idempotent=True)(double)) == ("unknown",)
    assert counted_effects(tool(read_only=True)(double)) == ()
    assert counted_effects(tool(effect_tags=["http"])(double)) == ("http",)
    assert counted_effects(tool(read_only=True, effect_tags=["file_read"])(double)) == (
        "file_read",
    )


# -- the built-ins --------------------------------------------------------------------------

BUILTINS_READ_ONLY = {
    "calculator": True,
    "read_file": True,
    "list_dir": True,
    "file_info": True,
    "glob_search": True,
    "grep_search": True,
    "duckduckgo_search": True,
    "write_file": False,
    "str_replace": False,
    "http_request": False,  # it can POST, PUT and DELETE
    "bash": False,
    "python_repl": False,
}


def test_the_built_ins_that_only_read_are_declared_read_only(tmp_path) -> None:
    assert set(BuiltinToolProvider.list_builtin_names()) >= set(BUILTINS_READ_ONLY)
    for name, read_only in BUILTINS_READ_ONLY.items():
        built = BuiltinToolProvider.build(name, {"workspace": str(tmp_path)})
        assert built.read_only is read_only, name
        if not read_only:
            assert built.effect_tags, f"{name} has side effects and must say which"

"""Substitutes on their own: stubs, recordings (matching, divergence, leftovers), functions, and
the SubstituteTool that keeps the original's face and argument checks."""

from __future__ import annotations

import re

import anyio
import pytest

from jianmu_bt.testing import FunctionSubstitute, Recorded, Stub, SubstituteTool
from jianmu_bt.tools import ToolSet, tool
from jianmu_bt.tools.builtin.calculator import CalculatorTool


def call(substituted: SubstituteTool, arguments: object):  # -> ToolResult
    return anyio.run(substituted.call, arguments)


def test_a_substitute_tool_keeps_the_original_face():
    original = CalculatorTool()
    substituted = SubstituteTool(original, Stub(result="42"))
    assert substituted.to_schema() == original.to_schema()
    assert substituted.spec() == original.spec()
    assert substituted.effect_tags == original.effect_tags
    assert ToolSet.from_tools([substituted]).schemas() == ToolSet.from_tools([original]).schemas()
    # Wrapping a substitute again wraps the original, not the substitute.
    again = SubstituteTool(substituted, Stub(result="0"))
    assert again.original is original


def test_arguments_the_original_refuses_are_refused_the_same_way():
    substituted = SubstituteTool(CalculatorTool(), Stub(result="42"))
    bad = call(substituted, {"expresion": "1+1"})
    real = anyio.run(CalculatorTool().call, {"expresion": "1+1"})
    assert not bad.ok and bad.error == real.error
    # The original's conveniences still work: the calculator takes a bare expression.
    assert call(substituted, "6 * 7").output == "42"


def test_stubs_answer_every_call_alike():
    ok = SubstituteTool(CalculatorTool(), Stub(result="7"))
    assert [call(ok, {"expression": e}).output for e in ("1", "2")] == ["7", "7"]
    failing = SubstituteTool(CalculatorTool(), Stub(error="out of paper"))
    result = call(failing, {"expression": "1"})
    assert not result.ok and result.error == "Error: out of paper"


def test_a_recording_answers_each_call_once_by_arguments():
    recorded = Recorded(
        [
            {"arguments": {"expression": "1+1"}, "result": "2"},
            {"arguments": {"expression": "2+2"}, "result": "4"},
            {"arguments": {"expression": "2+2"}, "error": "Error: busy"},
        ]
    )
    substituted = SubstituteTool(CalculatorTool(), recorded)
    # Out of order (as a parallel batch may be): each call finds its own entry.
    assert call(substituted, {"expression": "2+2"}).output == "4"
    assert call(substituted, {"expression": "1+1"}).output == "2"
    assert call(substituted, {"expression": "2+2"}).error == "Error: busy"
    assert recorded.divergences == []
    diverged = call(substituted, {"expression": "3+3"})
    assert not diverged.ok
    assert recorded.divergences == [
        'replay diverged: call 4 of \'calculator\' with arguments {"expression": "3+3"} is not '
        "in the recording (all 3 recorded call(s) of 'calculator' were used)"
    ]
    assert diverged.error == "Error: " + recorded.divergences[0]


def test_a_divergence_names_what_was_recorded_and_leftovers_are_listed():
    recorded = Recorded([{"arguments": {"expression": "1+1"}, "result": "2"}, {"result": "9"}])
    substituted = SubstituteTool(CalculatorTool(), recorded)
    assert call(substituted, {"expression": "5"}).output == "9"  # no arguments: any call
    call(substituted, {"expression": "6"})
    assert recorded.divergences[0].endswith(
        'the unused recorded call(s) of \'calculator\' have arguments: {"expression": "1+1"}'
    )
    assert recorded.unused("calculator") == [
        'recorded call 1 of \'calculator\' with arguments {"expression": "1+1"} was never made'
    ]


def test_a_recorded_entry_needs_one_outcome():
    with pytest.raises(ValueError, match=re.escape("{result: ...} or {error: ...}")):
        Recorded([{"arguments": {}, "result": 1, "error": "x"}])


def test_functions_answer_sync_or_async_and_their_exceptions_fail_the_call():
    seen = []

    def double(expression: str) -> str:
        seen.append(expression)
        return expression * 2

    async def later(expression: str) -> str:
        await anyio.sleep(0)
        return f"later {expression}"

    def broken(expression: str) -> str:
        raise ConnectionError("no route to host")

    assert call(SubstituteTool(CalculatorTool(), FunctionSubstitute(double)), "ab").output == (
        "abab"
    )
    assert seen == ["ab"]  # a bare value is passed as one argument
    assert call(SubstituteTool(CalculatorTool(), FunctionSubstitute(later)), {"expression": "x"})
    failed = call(SubstituteTool(CalculatorTool(), FunctionSubstitute(broken)), {"expression": "1"})
    assert not failed.ok and failed.error == "Error: ConnectionError: no route to host"


def test_another_tool_can_answer_for_the_original():
    @tool
    def fake(expression: str) -> str:
        """A fake calculator."""
        return "fake " + expression

    substituted = SubstituteTool(CalculatorTool(), FunctionSubstitute(fake))
    assert call(substituted, {"expression": "1+1"}).output == "fake 1+1"
    assert substituted.name == "calculator"

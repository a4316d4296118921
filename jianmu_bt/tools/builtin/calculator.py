"""calculator: the `Calculator` (see `jianmu_bt.tools.builtin.arithmetic`) as a tool.

Expressions are evaluated by an allow-listed AST walk with limits on input length, node count,
nesting depth, integer size (checked before each operation runs) and time, so `9**9**9` or
`comb(10**300, 10**5)` is refused at once; nothing is passed to eval or exec.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from pydantic import Field

from jianmu_bt.tools.builtin.arithmetic import (
    CONSTANTS,
    FUNCTION_NAMES,
    FUNCTIONS,
    MAX_EXPRESSION_CHARS,
    Calculator,
    CalculatorError,
    CalculatorLimits,
    Number,
)
from jianmu_bt.tools.builtin.arithmetic_limits import int_to_text
from jianmu_bt.tools.builtin.model_tool import ModelTool, ToolArguments, reports_faults

__all__ = [
    "CONSTANTS",
    "FUNCTIONS",
    "Calculator",
    "CalculatorArgs",
    "CalculatorError",
    "CalculatorLimits",
    "CalculatorTool",
    "format_number",
]


def format_number(value: Number) -> str:
    """The text of a result: integers in full, floats as Python prints them (shortest repr).

    Integers are converted whatever `sys.set_int_max_str_digits` says (the calculator's own
    `max_int_bits` already bounds their size, and so the cost of the conversion).
    """
    return int_to_text(value) if type(value) is int else repr(value)


class CalculatorArgs(ToolArguments):
    expression: str = Field(
        max_length=MAX_EXPRESSION_CHARS,
        description="Arithmetic expression, e.g. '17 * 23', '2**10 / 3', 'sqrt(2) * pi', "
        "'factorial(20)', '3 > 2'",
    )


class CalculatorTool(ModelTool):
    """Evaluate an arithmetic expression exactly (integers) or in floating point."""

    name = "calculator"
    description = (
        "Evaluate an arithmetic expression: numbers, + - * / // % ** (power), comparisons, "
        "and/or/not, parentheses, constants pi e tau inf nan, and the functions "
        f"{', '.join(FUNCTION_NAMES)}. Integers are exact (up to about 4,000 digits)."
    )
    Arguments = CalculatorArgs
    primary_argument = "expression"
    output_schema: dict[str, Any] = {
        "type": "string",
        "description": "The value of the expression, e.g. '391' or '1.4142135623730951'",
    }
    effect_tags = ()
    read_only = True
    # Every evaluation is bounded to well under a millisecond; no thread hop is needed.
    blocking = False

    def __init__(self, limits: CalculatorLimits | Mapping[str, int] | None = None) -> None:
        """`limits` as a CalculatorLimits or a mapping of its fields."""
        if isinstance(limits, Mapping):
            limits = CalculatorLimits(**limits)
        self.calculator = Calculator(limits)

    def sandbox_kwargs(self) -> dict[str, Any]:
        """Constructor arguments (JSON) that rebuild this tool in a sandbox worker."""
        return {"limits": dataclasses.asdict(self.calculator.limits)}

    @reports_faults
    def run(self, input: CalculatorArgs) -> str:
        return format_number(self.calculator.evaluate(input.expression))

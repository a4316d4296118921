"""calculator: correct arithmetic, and an attack corpus in which nothing gets through or hangs."""

from __future__ import annotations

import math
import tracemalloc
from pathlib import Path

import anyio
import pytest

from jianmu_bt.tools import ToolSet
from jianmu_bt.tools.builtin.calculator import (
    Calculator,
    CalculatorError,
    CalculatorLimits,
    CalculatorTool,
)

PWNED = Path("/tmp/jianmu-calculator-pwned")

ATTACKS: list[str] = [
    f"__import__('os').system('touch {PWNED}')",
    "().__class__.__bases__[0].__subclasses__()",
    "(1).__class__",
    "[].__class__.__mro__",
    "__builtins__",
    "globals()",
    "locals()",
    "eval('1+1')",
    "exec('x=1')",
    "open('/etc/passwd').read()",
    "lambda: 1",
    "(lambda x: x)(1)",
    "[x for x in range(10**9)]",
    "{x: x for x in range(10)}",
    "sum(x for x in range(10**9))",
    "9**9**9",
    "10**10**10",
    "2**(10**8)",
    "pow(10, 10**8)",
    "factorial(10**6)",
    "comb(10**6, 5*10**5)",
    "perm(10**6, 10**5)",
    "10**4000 * 10**4000",
    "lcm(10**4000, 10**4000 - 1)",
    "9" * 999 + "**9",
    "1" * 1001,
    "(" * 300 + "1" + ")" * 300,
    "-" * 999 + "1",
    "not " * 240 + "1",
    "2**" * 300 + "2",
    "'a' * 10**9",
    "b'x' * 10",
    "(x := 5)",
    "f'{1}'",
    "1 if True else 2",
    "[1, 2, 3]",
    "{'a': 1}",
    "a.b",
    "math.sqrt(4)",
    "sqrt.__call__(4)",
    "round(1, -10**9)",
    "1j * 1j",
    "(-1) ** 0.5",
    "max(*[1, 2])",
    "sqrt(x=4)",
    "import os",
    "1; 2",
    "1 << 10**9",
    "~0",
    "1 @ 2",
    "None",
    "...",
    "1 in [1]",
    "1 is 1",
    "1\x00+1",
    "await x",
    "(yield)",
    "int('9' * 5000)",
]


def test_the_attack_corpus_has_at_least_thirty_entries() -> None:
    assert len(ATTACKS) >= 30 and len(set(ATTACKS)) == len(ATTACKS)


@pytest.mark.anyio
@pytest.mark.timeout(20)  # a hang guard: computing 9**9**9 would never end
@pytest.mark.parametrize("expression", ATTACKS, ids=lambda e: repr(e)[:50])
async def test_attack_is_refused_with_a_reason_before_any_big_work(expression: str) -> None:
    tools = ToolSet.resolve(["calculator"])
    tracemalloc.start()
    try:
        result = await tools.call("calculator", {"expression": expression})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.ok is False, f"{expression[:60]!r} evaluated to {result.output!r:.60}"
    assert result.error.startswith("Error:") and len(result.error) > 20
    # Refused up front, not after building the huge number (2**(10**8) alone is 12 MiB).
    assert peak < 2 << 20, f"refusing {expression[:40]!r} allocated {peak} bytes"
    assert not PWNED.exists()


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("2 + 3 * 4", "14"),
        ("(2 + 3) * 4", "20"),
        ("17 * 23", "391"),
        ("2 ** 10", "1024"),
        ("2 ** -1", "0.5"),
        ("2 ** 3 ** 2", "512"),
        ("-3 ** 2", "-9"),
        ("7 // 2", "3"),
        ("-7 // 2", "-4"),
        ("7 % 3", "1"),
        ("7 / 2", "3.5"),
        ("1 / 3", "0.3333333333333333"),
        ("0.1 + 0.2", "0.30000000000000004"),
        ("2 ** 100", str(2**100)),
        ("1e308 * 10", "inf"),
        ("  1 + 1  ", "2"),
        ("True + 1", "2"),
        ("sqrt(16)", "4.0"),
        ("abs(-5)", "5"),
        ("max(1, 5, 3)", "5"),
        ("min(4, 2)", "2"),
        ("round(3.14159, 2)", "3.14"),
        ("round(2.5)", "2"),
        ("round(1234, -2)", "1200"),
        ("factorial(20)", "2432902008176640000"),
        ("comb(5, 2)", "10"),
        ("perm(5, 2)", "20"),
        ("comb(10**100, 2)", str(math.comb(10**100, 2))),
        ("gcd(12, 18)", "6"),
        ("log(e)", "1.0"),
        ("log(8, 2)", "3.0"),
        ("log10(1000)", "3.0"),
        ("floor(2.7)", "2"),
        ("ceil(2.1)", "3"),
        ("hypot(3, 4)", "5.0"),
        ("int(7.9)", "7"),
        ("pi", "3.141592653589793"),
        ("3 > 2", "True"),
        ("1 < 2 < 3", "True"),
        ("1 < 3 < 2", "False"),
        ("2 == 2.0", "True"),
        ("not 0", "True"),
        ("1 and 0", "0"),
        ("0 or 5", "5"),
        ("+".join(["1"] * 400), "400"),  # a long sum is not deep nesting
    ],
)
def test_arithmetic(expression: str, expected: str) -> None:
    assert CalculatorTool().run({"expression": expression}) == expected


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("0 ** -1", "negative power"),
        ("sqrt(-1)", "math domain error"),
        ("", "empty"),
        ("2 +", "not a valid expression"),
        ("foo", "unknown name 'foo'"),
        ("foo(1)", "unknown function 'foo'"),
        ("x.y", "attribute access"),
        ("(-8) ** (1/3)", "complex"),
        ("2 ** 13300", "more than 13300 bits"),
        ("max()", "max()"),
        ("round(1.5, 0.5)", "an optional integer of digits"),
        ("round()", "an optional integer of digits"),
    ],
)
def test_errors_say_what_was_wrong(expression: str, reason: str) -> None:
    output = CalculatorTool().run({"expression": expression})
    assert output.startswith("Error:") and reason in output


def test_the_largest_allowed_integer_is_computed_exactly() -> None:
    assert Calculator().evaluate("2 ** 13299") == 2**13299


def test_limits_are_configurable() -> None:
    small = Calculator(CalculatorLimits(max_int_bits=64, max_chars=20, max_nodes=5))
    assert small.evaluate("2 ** 63") == 2**63
    with pytest.raises(CalculatorError, match="more than 64 bits"):
        small.evaluate("2 ** 100")
    with pytest.raises(CalculatorError, match="the limit is 20"):
        small.evaluate("1 + " * 10 + "1")
    with pytest.raises(CalculatorError, match="more than 5 parts"):
        small.evaluate("1+1+1+1+1")


@pytest.mark.anyio
async def test_a_bare_string_input_is_an_expression() -> None:
    """A tree step may pass the expression itself instead of {"expression": ...}."""
    result = await ToolSet.resolve(["calculator"]).call("calculator", "2 + 3 * 4")
    assert result.ok and result.output == "14"


@pytest.mark.anyio
async def test_huge_powers_do_not_hold_the_event_loop() -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.01)

    tool = CalculatorTool()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ticker)
            for expression in ["9**9**9", "10**10**10", "9**9**8", "factorial(10**8)"] * 5:
                assert not (await tool.call(expression)).ok
            await anyio.sleep(0.05)
            tg.cancel_scope.cancel()
    assert ticks >= 1


def test_schema_describes_the_expression() -> None:
    schema = CalculatorTool().to_schema()
    prop = schema["parameters"]["properties"]["expression"]
    assert schema["name"] == "calculator"
    assert schema["parameters"]["required"] == ["expression"]
    assert prop["type"] == "string" and prop["description"] and prop["maxLength"] == 1000
    assert "sqrt" in schema["description"]

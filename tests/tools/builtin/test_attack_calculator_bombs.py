"""Calculator CPU and memory bombs: every one is an error result that names the limit.

The bombs run one after another in a subprocess under an address-space limit (RLIMIT_AS) and an
overall timeout; when one goes off (the process dies or hangs), it is reported as the culprit and
the rest go on in a fresh subprocess. The timeout only keeps a hung bomb from hanging the test
run; it is not a timing assertion. A bomb passes when it ran to an answer (not killed, no
MemoryError) and the tool's answer is an "Error:" that names the limit which refused it, i.e. the
huge computation did not happen.
"""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from jianmu_bt.tools.builtin.arithmetic_limits import (
    CalculatorLimits,
    comb_bits,
    factorial_bits,
    int_to_text,
    perm_bits,
)
from jianmu_bt.tools.builtin.calculator import Calculator, CalculatorError, CalculatorTool

MEMORY_LIMIT = 1 << 30  # 1 GiB of address space
HUNG_AFTER = 30  # seconds; a bound for a hung subprocess, not a timing assertion
SIZE = "max_int_bits"

# (expression, words the error must contain)
BOMBS: list[tuple[str, str]] = [
    # comb / perm: the lgamma difference of two huge, nearly equal floats was 0 (241 s measured)
    ("comb(10**300, 10**5)", SIZE),
    ("perm(10**300, 10**5)", SIZE),
    ("comb(10**20, 5000)", SIZE),
    ("comb(10**300, 10**300 - 10**5)", SIZE),
    ("comb((10**150)**2, 10**5)", SIZE),
    ("comb(int(1e300), int(1e5))", SIZE),
    ("comb(2**64 + 1, 2**20)", SIZE),
    ("comb(factorial(30), factorial(25))", SIZE),
    ("perm(2**45, 10**4)", SIZE),
    ("perm(10**6, 10**5)", SIZE),
    ("comb(10**6, 5*10**5)", SIZE),
    # factorial
    ("factorial(10**6)", SIZE),
    ("factorial(10**100)", SIZE),
    ("factorial(int(1e308))", SIZE),
    ("factorial(2**13000)", SIZE),
    ("factorial(factorial(20))", SIZE),
    # powers, also with exponents too large for a float
    ("9**9**9", SIZE),
    ("10**10**10", SIZE),
    ("2**(10**8)", SIZE),
    ("3 ** (2**1100)", SIZE),
    ("(-3) ** (2**1100)", SIZE),
    ("pow(3, 2**1100)", SIZE),
    ("pow(10, 10**8)", SIZE),
    ("pow(pow(2, 100), pow(2, 100))", SIZE),
    ("(10**10**6)", SIZE),  # its text would be a million digits
    ("isqrt(10**100000)", SIZE),
    # products and repeated multiplication of big integers
    ("10**4000 * 10**4000", SIZE),
    ("10**400000 * 10**400000", SIZE),
    ("(10**4000)**2", SIZE),
    ("2**13299 * 2**13299 * 2**13299", SIZE),
    ("((2**6000) * (2**6000)) * (2**6000)", SIZE),
    (
        " * ".join(["int(9e307)"] * 14),
        SIZE,
    ),
    ("lcm(2**13000 - 1, 3**8000 - 1)", SIZE),
    ("lcm(2**6000 - 1, 3**4000 - 1, 5**3000 - 1, 7**2000 - 1)", SIZE),
    # round(n, -k) computes 10**k
    ("round(2**13000, -10**6)", "max_round_digits"),
    ("round(1.5, 10**1000)", "max_round_digits"),
    # refused forms: no strings, no shifts, no modular pow
    ("int('9' * 5000)", "not allowed: str"),
    ("int('9' * 10**6)", "not allowed: str"),
    ("1 << 10**9", "LShift"),
    ("1 << 100000 << 100000", "LShift"),
    ("pow(2, 10**4000, 10**4000 + 1)", "exactly two arguments"),
    ("9" * 990 + "**9", SIZE),
]

# Bombs with limits raised to their ceilings: the deadline is what stops them.
DEADLINE_BOMBS: list[tuple[str, dict[str, Any], str]] = [
    (
        " + ".join(["10**30000 // 7**10000 * 0"] * 200),
        {"max_chars": 10_000, "max_nodes": 100_000, "max_int_bits": 100_000, "time_limit": 0.2},
        "time limit",
    ),
    (
        " + ".join(["isqrt(10**30000) * 0"] * 300),
        {"max_chars": 10_000, "max_nodes": 100_000, "max_int_bits": 100_000, "time_limit": 0.1},
        "time limit",
    ),
]

# Runs the cases given as a JSON list, one after another, printing one JSON line per answer.
RUNNER = """
import json, sys
from jianmu_bt.tools.builtin.calculator import CalculatorTool
from jianmu_bt.tools.builtin.calculator import Calculator, CalculatorError, CalculatorLimits
default_digits = sys.get_int_max_str_digits()
for case in json.loads(sys.argv[1]):
    sys.set_int_max_str_digits(case.get("int_max_str_digits", default_digits))
    if "limits" in case:  # limits past the tool's 1000-character argument: the Calculator itself
        try:
            limits = CalculatorLimits(**case["limits"])
            output = repr(Calculator(limits).evaluate(case["expression"]))
        except CalculatorError as exc:
            output = f"Error: {exc}"
    else:
        output = CalculatorTool().run({"expression": case["expression"]})
    print(json.dumps({"output": output}), flush=True)
"""


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _text(output: str | bytes | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def run_isolated(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Run calculator calls one after another in memory-limited subprocesses: per case, what it
    printed, or why not. A case that kills or hangs its process is the failure; the cases after
    it run in a fresh process, so one bomb never hides the others' results."""
    results: list[dict[str, Any]] = []
    while len(results) < len(cases):
        todo = cases[len(results) :]
        try:
            done = subprocess.run(
                [sys.executable, "-c", RUNNER, json.dumps(todo)],
                capture_output=True,
                text=True,
                timeout=HUNG_AFTER,
                preexec_fn=_limit_memory,
                cwd=Path(__file__).resolve().parents[3],
                env={**os.environ, "PYTHONHASHSEED": "0"},
            )
            stdout, why = done.stdout, f"exit code {done.returncode}: {done.stderr[-800:]}"
        except subprocess.TimeoutExpired as expired:
            stdout, why = _text(expired.stdout), f"still running after {HUNG_AFTER}s (went off)"
        answers = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
        results += answers[: len(todo)]
        if len(answers) < len(todo):
            results.append({"failure": why})  # the case it was running when it died or hung
    return results


@pytest.fixture(scope="module")
def bomb_results() -> dict[str, dict[str, Any]]:
    """Every bomb run once, all in one subprocess unless one of them goes off."""
    cases = {expr: {"expression": expr} for expr, _ in BOMBS}
    cases.update({expr: {"expression": expr, "limits": lim} for expr, lim, _ in DEADLINE_BOMBS})
    return dict(zip(cases, run_isolated(list(cases.values())), strict=True))


def test_the_bomb_corpus_is_large_and_distinct() -> None:
    assert len(BOMBS) >= 40 and len({expr for expr, _ in BOMBS}) == len(BOMBS)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("expression", "reason"), BOMBS, ids=lambda v: repr(v)[:50])
def test_bomb_is_refused_naming_the_limit(
    bomb_results: dict[str, dict[str, Any]], expression: str, reason: str
) -> None:
    result = bomb_results[expression]
    assert "failure" not in result, result.get("failure")
    assert result["output"].startswith("Error:"), f"{expression!r} gave {result['output']:.80}"
    assert reason in result["output"], result["output"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("expression", "limits", "reason"), DEADLINE_BOMBS, ids=["div", "isqrt"])
def test_the_whole_evaluation_has_a_deadline(
    bomb_results: dict[str, dict[str, Any]], expression: str, limits: dict[str, Any], reason: str
) -> None:
    result = bomb_results[expression]
    assert "failure" not in result, result.get("failure")
    assert result["output"].startswith("Error:") and reason in result["output"]


def test_a_small_time_limit_stops_a_long_expression_in_process() -> None:
    calculator = Calculator(CalculatorLimits(time_limit=1e-9))
    with pytest.raises(CalculatorError, match="time limit of 1e-09 s"):
        calculator.evaluate(" + ".join(["1"] * 100))


@pytest.mark.timeout(60)
def test_results_print_whatever_the_interpreters_digit_limit_is() -> None:
    """`sys.set_int_max_str_digits(640)` in the host process does not break a 4,000-digit answer,
    and `0` (unlimited) does not make a huge conversion possible: sizes are bounded first."""
    cases = [(640, "2**13299", str(2**13299)), (0, "10**10**6", "Error:")]
    results = run_isolated([{"expression": e, "int_max_str_digits": d} for d, e, _ in cases])
    for (_, _, expected), result in zip(cases, results, strict=True):
        assert "failure" not in result, result.get("failure")
        assert result["output"].startswith(expected[:50])


def test_int_to_text_is_exact_past_the_interpreters_digit_limit() -> None:
    value = -(7**4000)  # 3,381 digits: past 640, within the default 4,300
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        text = int_to_text(value)
    finally:
        sys.set_int_max_str_digits(old)
    assert int(text) == value


@pytest.mark.parametrize(
    ("n", "k"),
    [(10**300, 10**5), (10**20, 5000), (2**64 + 1, 2**20), (2**45, 300), (10**6, 5 * 10**5)],
)
def test_size_estimates_are_never_far_below_the_truth(n: int, k: int) -> None:
    """The estimates that guard comb/perm/factorial, checked against exact log sums."""
    k_small = min(k, n - k)
    exact_comb = sum(math.log2(n - i) - math.log2(i + 1) for i in range(min(k_small, 200_000)))
    exact_perm = sum(math.log2(n - i) for i in range(min(k, 200_000)))
    # (Only the first 200,000 terms are summed: a lower bound on the truth, which suffices.)
    assert comb_bits(n, k) >= exact_comb - 64
    assert perm_bits(n, k) >= exact_perm - 64
    assert factorial_bits(2000) == pytest.approx(math.log2(math.factorial(2000)), abs=1e-6)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("comb(10**20, 50)", math.comb(10**20, 50)),
        ("comb(20000, 19990)", math.comb(20000, 19990)),
        ("comb(2**60, 3)", math.comb(2**60, 3)),
        ("perm(2**45, 290)", math.perm(2**45, 290)),
        ("comb(2000, 1000)", math.comb(2000, 1000)),
        ("factorial(1465)", math.factorial(1465)),  # 13,300 bits exactly
        ("lcm(2**13000, 2**12999)", 2**13000),
        ("lcm(4, 6, 10)", 60),
        ("lcm()", 1),
        ("lcm(3, 0)", 0),
        ("pow(2, 13299)", 2**13299),
        ("1 ** (2**13000)", 1),
        ("(-1) ** (2**13000 + 1)", -1),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_results_just_inside_the_limits_are_still_computed(expression: str, expected: int) -> None:
    assert Calculator().evaluate(expression) == expected


@pytest.mark.parametrize(
    "limits",
    [
        {"max_int_bits": 10**9},
        {"max_chars": 10**7},
        {"time_limit": 0},
        {"max_nodes": -1},
        {"time_limit": 3600},
    ],
)
def test_limits_past_their_ceilings_are_refused(limits: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="CalculatorLimits"):
        CalculatorTool(limits)

"""Calculator evaluation time next to simpleeval on the same expressions.

Both parse the expression text and walk its AST on every call (measured in alternating
batches, medians of 21); simpleeval gets the same math
functions and constants. Measured: `Calculator.evaluate(text)` against `SimpleEval.eval(text)`
(`pip install -e ".[bench]"` for simpleeval). Target: no slower (ratio = simpleeval / ours >= 1).
The last row adds what a tool call costs on top (`ToolSet.call` of the calculator).

Run: python benchmarks/bench_calculator.py
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Row, per_call_async, print_table

from jianmu_bt.tools import ToolSet
from jianmu_bt.tools.builtin.calculator import CONSTANTS, FUNCTIONS, Calculator, CalculatorError

CALLS, REPEATS = 1000, 21


def side_by_side(ours: Callable[[], object], anchor: Callable[[], object]) -> tuple[float, float]:
    """Median seconds per call of each, measured in alternating batches after a warm-up.

    Alternating keeps a change in machine load from favouring whichever ran second.
    """
    ours_samples, anchor_samples = [], []
    for repeat in range(REPEATS + 1):
        for fn, samples in ((ours, ours_samples), (anchor, anchor_samples)):
            start = time.perf_counter()
            for _ in range(CALLS):
                fn()
            if repeat:  # the first round is the warm-up
                samples.append((time.perf_counter() - start) / CALLS)
    return statistics.median(ours_samples), statistics.median(anchor_samples)


EXPRESSIONS = {
    "small integer arithmetic": "2 + 3 * 4 - 10 // 3",
    "float functions and constants": "sqrt(2) * pi + sin(1) / cos(0.5)",
    "50-term sum": " + ".join(str(i) for i in range(50)),
    "comparisons and booleans": "1 < 2 < 3 and 4 >= 3 or 0",
    "exact big integers": "2 ** 1000 * 3 ** 500 - 7 ** 300",
    "nested parentheses": "((((1 + 2) * (3 + 4)) / ((5 - 6) * (7 + 8))) ** 2)",
}


def main() -> None:
    try:
        from simpleeval import NumberTooHigh, SimpleEval
    except ImportError:
        sys.exit("simpleeval is not installed: pip install -e '.[bench]'")

    ours = Calculator()
    functions = {**FUNCTIONS, "factorial": math.factorial, "pow": pow, "round": round}
    anchor = SimpleEval(functions=functions, names=dict(CONSTANTS))

    rows = []
    for what, text in EXPRESSIONS.items():
        expected = anchor.eval(text)
        assert ours.evaluate(text) == expected, (what, ours.evaluate(text), expected)
        mine, theirs = side_by_side(lambda t=text: ours.evaluate(t), lambda t=text: anchor.eval(t))
        rows.append(Row(what, mine, theirs, "simpleeval", 1))

    def refuse_ours() -> None:
        with contextlib.suppress(CalculatorError):
            ours.evaluate("9**9**9")

    def refuse_anchor() -> None:
        with contextlib.suppress(NumberTooHigh):
            anchor.eval("9**9**9")

    mine, theirs = side_by_side(refuse_ours, refuse_anchor)
    rows.append(Row("refusing 9**9**9", mine, theirs, "simpleeval", 1))

    tools = ToolSet.resolve(["calculator"])
    text = EXPRESSIONS["small integer arithmetic"]
    tool_call = asyncio.run(
        per_call_async(lambda: tools.call("calculator", {"expression": text}), CALLS, REPEATS)
    )
    rows.append(
        Row("ToolSet.call('calculator'), small arithmetic", tool_call, rows[0].anchor, "simpleeval")
    )
    print_table("Evaluation time per expression; ratio = simpleeval / ours (target >= 1)", rows)


if __name__ == "__main__":
    main()

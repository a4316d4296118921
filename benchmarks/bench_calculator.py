"""Calculator evaluation time next to simpleeval on the same expressions.

Both parse the expression text and walk its AST on every call; simpleeval gets the same math
functions and constants. Measured: `Calculator.evaluate(text)` against `SimpleEval.eval(text)`
(`pip install -e ".[bench]"` for simpleeval). Target: no slower (ratio = simpleeval / ours >= 1).
The last row adds what a tool call costs on top (`ToolSet.call` of the calculator).

Run: python benchmarks/bench_calculator.py [--quick]
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import (
    Row,
    Section,
    Settings,
    ainterleave,
    aper_call,
    faster,
    info as info_row,
    interleave,
    optional,
    per_call,
)
from benchmarks.suite import main
from jianmu_bt.tools import ToolSet
from jianmu_bt.tools.builtin.calculator import CONSTANTS, FUNCTIONS, Calculator, CalculatorError

EXPRESSIONS = {
    "small integer arithmetic": "2 + 3 * 4 - 10 // 3",
    "float functions and constants": "sqrt(2) * pi + sin(1) / cos(0.5)",
    "50-term sum": " + ".join(str(i) for i in range(50)),
    "comparisons and booleans": "1 < 2 < 3 and 4 >= 3 or 0",
    "exact big integers": "2 ** 1000 * 3 ** 500 - 7 ** 300",
    "nested parentheses": "((((1 + 2) * (3 + 4)) / ((5 - 6) * (7 + 8))) ** 2)",
}
TOO_BIG = "9**9**9"


def calculator(settings: Settings) -> Section:
    """Each expression through our Calculator next to simpleeval, per evaluation."""
    simpleeval, missing = optional("simpleeval")
    calls, rounds = settings.pick(1000, 200), settings.pick(21, 5)
    ours = Calculator()

    def refuse_ours() -> None:
        with contextlib.suppress(CalculatorError):
            ours.evaluate(TOO_BIG)

    samplers = {
        f"ours {what}": per_call(lambda t=text: ours.evaluate(t), calls)
        for what, text in EXPRESSIONS.items()
    }
    samplers["ours refuse"] = per_call(refuse_ours, calls)
    if simpleeval is not None:
        functions = {**FUNCTIONS, "factorial": math.factorial, "pow": pow, "round": round}
        anchor = simpleeval.SimpleEval(functions=functions, names=dict(CONSTANTS))
        for what, text in EXPRESSIONS.items():
            assert ours.evaluate(text) == anchor.eval(text), what  # the same answers
            samplers[f"anchor {what}"] = per_call(lambda t=text: anchor.eval(t), calls)

        def refuse_anchor() -> None:
            with contextlib.suppress(simpleeval.NumberTooHigh):
                anchor.eval(TOO_BIG)

        samplers["anchor refuse"] = per_call(refuse_anchor, calls)
    t = interleave(samplers, rounds, warmup=1)

    rows: list[Row] = [
        faster(what, t[f"ours {what}"], t.get(f"anchor {what}"), "simpleeval", 1, missing)
        for what in EXPRESSIONS
    ]
    rows.append(
        faster(
            f"refusing {TOO_BIG}",
            t["ours refuse"],
            t.get("anchor refuse"),
            "simpleeval",
            1,
            missing,
        )
    )
    tools = ToolSet.resolve(["calculator"])
    text = EXPRESSIONS["small integer arithmetic"]
    call = aper_call(lambda: tools.call("calculator", {"expression": text}), calls)
    tool_call = asyncio.run(ainterleave({"call": call}, rounds, warmup=1))["call"]
    rows.append(info_row("  ToolSet.call('calculator'), small arithmetic", min(tool_call)))
    return Section("Calculator: time per evaluation (ratio simpleeval / ours)", rows)


AREAS = {"calculator": calculator}

if __name__ == "__main__":
    sys.exit(main(AREAS))

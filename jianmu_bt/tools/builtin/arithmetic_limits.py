"""The calculator's limits, the cost bounds it checks before an operation runs, and the
operations that need them (`**`/pow, factorial, comb, perm, lcm, round).

CPython's big-integer arithmetic holds the GIL and cannot be interrupted, so a deadline alone
cannot stop `comb(10**300, 10**5)` (minutes) or `factorial(10**6)`: the size of every result
that can grow past its arguments is estimated here *before* the operation runs, from the
arguments' bit lengths and `lgamma`, and the operation is refused when the estimate is past
`CalculatorLimits.max_int_bits`. The estimates are never far below the truth (a few bits at
most), so a result they let through is cheap to compute even when the final size check then
refuses it.

Every other operation the calculator allows costs at most about quadratic time in its
arguments' sizes, and every argument is bounded (an int of at most `max_int_bits` bits, plus
one bit per `+`/`-`, or a float), so bounding the sizes bounds the work. The deadline
(`time_limit`) is the backstop over the whole walk.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from jianmu_bt.tools.builtin.faults import ToolFault

Number = int | float  # bool is an int

#: Longest expression accepted by default, in characters.
MAX_EXPRESSION_CHARS = 1000

#: Hard ceilings that no configuration may pass: beyond them one operation (or the conversion
#: of the result to text, quadratic in CPython 3.11) would take longer than a deadline can bound.
CEILINGS: dict[str, float] = {
    "max_chars": 100_000,
    "max_nodes": 100_000,
    "max_depth": 1000,
    "max_int_bits": 100_000,
    "max_round_digits": 10_000,
    "time_limit": 60.0,
}

#: Functions that can build huge integers: their result size is estimated before they run.
SIZED_FUNCTIONS = ("factorial", "comb", "perm", "pow", "round", "lcm")

# Below this, lgamma differences are accurate to a small fraction of a bit; above it a
# difference of two huge, nearly equal floats loses every bit (that was the comb bomb).
_LGAMMA_EXACT_BELOW = 2**40
# With n >= 2**40, a k past this makes any comb or perm more than k bits, past the ceiling of
# max_int_bits: refused outright.
_SMALL_K = 2**20
_LN2 = math.log(2)


class CalculatorError(ToolFault):
    """An expression the calculator refuses or cannot evaluate; the message says why."""


@dataclass(frozen=True, slots=True)
class CalculatorLimits:
    """Bounds on one evaluation. The defaults allow integers of about 4,000 digits.

    `time_limit` (seconds) bounds the whole walk; each single operation is bounded in size
    before it runs. Values past `CEILINGS` are refused when the limits are built.
    """

    max_chars: int = MAX_EXPRESSION_CHARS
    max_nodes: int = 1000
    max_depth: int = 200
    max_int_bits: int = 13_300
    max_round_digits: int = 1000
    time_limit: float = 0.5

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            ceiling = CEILINGS[field.name]
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"CalculatorLimits.{field.name} must be a positive number")
            if value > ceiling:
                raise ValueError(
                    f"CalculatorLimits.{field.name}={value} is past its ceiling of {ceiling:g}"
                )

    @property
    def max_digits(self) -> int:
        """Most decimal digits an integer within `max_int_bits` can have."""
        return int(self.max_int_bits * math.log10(2)) + 1


def product_bits(left: int | float, right: int | float) -> int:
    """An upper bound on the bits of left * right (0 when either is a float)."""
    if isinstance(left, int) and isinstance(right, int):
        return left.bit_length() + right.bit_length()
    return 0


def power_bits(base: int, exponent: int) -> float:
    """An upper bound on the bits of base ** exponent, for integers and exponent > 0."""
    if -1 <= base <= 1:
        return 1.0
    if exponent.bit_length() > 62:  # at least 2**61 bits; float(exponent) may overflow
        return math.inf
    return exponent * math.log2(abs(base)) + 1  # log2 takes ints of any size


def _log2_factorial(n: int) -> float:
    """log2(n!) for 0 <= n < 2**40, within a small fraction of a bit."""
    return math.lgamma(n + 1) / _LN2


def factorial_bits(n: int) -> float:
    """About the bits of n! (n >= 0); inf when n is huge (n! has more than n bits, past any
    limit's ceiling)."""
    return _log2_factorial(n) if n < _LGAMMA_EXACT_BELOW else math.inf


def perm_bits(n: int, k: int) -> float:
    """About the bits of perm(n, k) = n! / (n-k)! for 0 <= k <= n.

    Never much below the truth: for a huge n it is k * log2(n), an upper bound within
    k**2 / (n - k) bits of it; for a huge k it is inf (the result has more than k bits, past
    any limit's ceiling).
    """
    if k <= 0:
        return 0.0
    if n < _LGAMMA_EXACT_BELOW:
        return _log2_factorial(n) - _log2_factorial(n - k)
    if k > _SMALL_K:  # every factor is at least n - k + 1 >= 2
        return math.inf
    return k * math.log2(n)


def comb_bits(n: int, k: int) -> float:
    """About the bits of comb(n, k) for 0 <= k <= n (see `perm_bits` for the accuracy)."""
    k = min(k, n - k)
    if k <= 0:
        return 0.0
    if n < _LGAMMA_EXACT_BELOW:
        return _log2_factorial(n) - _log2_factorial(k) - _log2_factorial(n - k)
    if k > _SMALL_K:  # every factor (n - i) / (k - i) is at least n / k >= 2
        return math.inf
    return k * math.log2(n) - _log2_factorial(k)


def int_to_text(value: int) -> str:
    """The decimal text of `value`, whatever `sys.set_int_max_str_digits` is set to.

    The calculator's integers are bounded by `CEILINGS["max_int_bits"]`, so the conversion is
    bounded too; past the interpreter's limit it goes in pieces of 500 digits.
    """
    try:
        return repr(value)
    except ValueError:  # past sys.get_int_max_str_digits()
        pass
    sign, value = ("-", -value) if value < 0 else ("", value)
    pieces: list[str] = []
    chunk = 10**500
    while value >= chunk:
        value, low = divmod(value, chunk)
        pieces.append(f"{low:0500d}")
    pieces.append(repr(value))
    return sign + "".join(reversed(pieces))


def too_large(max_bits: int, what: str = "the result") -> CalculatorError:
    """The refusal of a result past `max_bits`, naming the limit."""
    return CalculatorError(
        f"{what} would have more than {max_bits} bits (about {int(max_bits * math.log10(2))} "
        "digits), past the calculator's limit (max_int_bits); it is refused before it is computed"
    )


def power(base: Number, exponent: Number, max_bits: int) -> Number:
    """base ** exponent, refused before it runs when an exact result would pass `max_bits`."""
    if (
        isinstance(base, int)
        and isinstance(exponent, int)
        and exponent > 0
        # exponent * bit_length bounds exponent * log2|base| from above: past that cheap bound
        # only, work out the estimate (the same refusals, without a log2 for small powers)
        and exponent * base.bit_length() > max_bits
        and power_bits(base, exponent) > max_bits + 1
    ):
        raise too_large(max_bits)
    try:
        return base**exponent
    except ZeroDivisionError:
        raise CalculatorError("zero cannot be raised to a negative power") from None
    except OverflowError:
        raise CalculatorError("the result is too large for a floating-point number") from None


def sized_call(name: str, args: list[Number], limits: CalculatorLimits) -> Number:
    """One of SIZED_FUNCTIONS, with its result size estimated before it runs."""
    max_bits = limits.max_int_bits
    if name == "pow":
        if len(args) != 2:
            raise CalculatorError("pow() takes exactly two arguments (base, exponent)")
        return power(args[0], args[1], max_bits)
    if name == "round":
        if len(args) == 1:
            return round(args[0])
        if len(args) != 2 or not isinstance(args[1], int):
            raise CalculatorError("round() takes a number and an optional integer of digits")
        # round(n, -k) computes 10**k: bound k.
        if abs(args[1]) > limits.max_round_digits:
            raise CalculatorError(
                f"round(): at most {limits.max_round_digits} digits (max_round_digits)"
            )
        return round(args[0], args[1])
    if any(not isinstance(a, int) for a in args):
        raise CalculatorError(f"{name}() takes integers")
    integers: list[int] = args  # type: ignore[assignment]
    if name == "lcm":
        return _lcm(integers, max_bits)
    if any(a < 0 for a in integers):
        raise CalculatorError(f"{name}() takes non-negative integers")
    if name == "factorial":
        if len(integers) != 1:
            raise CalculatorError("factorial() takes exactly one argument")
        if factorial_bits(integers[0]) > max_bits:
            raise too_large(max_bits, "factorial(n)")
        return math.factorial(integers[0])
    if len(integers) != 2:
        raise CalculatorError(f"{name}() takes exactly two arguments (n, k)")
    n, k = integers
    if k > n:
        return 0
    bits = comb_bits(n, k) if name == "comb" else perm_bits(n, k)
    if not bits <= max_bits:  # NaN is refused too
        raise too_large(max_bits, f"{name}(n, k)")
    return math.comb(n, k) if name == "comb" else math.perm(n, k)


def _lcm(args: list[int], max_bits: int) -> int:
    """lcm(*args) one argument at a time, each step sized before its product is taken."""
    result = 1
    for arg in args:
        if arg == 0:
            return 0
        quotient = result // math.gcd(result, arg)
        if quotient.bit_length() + arg.bit_length() > max_bits + 1:
            raise too_large(max_bits, "lcm(...)")
        result = abs(quotient * arg)
    return result

"""Safe arithmetic: an allow-listed walk of a Python AST, with limits; no eval or exec.

The expression is parsed with `ast.parse(mode="eval")` and walked node by node. Only numbers,
`+ - * / // % **`, unary `+ - not`, comparisons, `and`/`or`, parentheses, a fixed table of math
functions and a few constants are accepted; anything else (names, attributes, subscripts, calls
of anything but a listed function, lambdas, comprehensions, strings, shifts) is refused with the
reason.

Limits keep every evaluation quick (see `jianmu_bt.tools.builtin.arithmetic_limits`): the input
length, the number of nodes and the nesting depth are bounded; every operation that can make an
integer much longer than its arguments (`*`, `**`, pow, factorial, comb, perm, lcm, round) has
its result size estimated before it runs, so `9**9**9` or `comb(10**300, 10**5)` is refused at
once instead of holding the interpreter (CPython's big-integer arithmetic holds the GIL, so a
worker thread would not help); every other operation is at most quadratic in its bounded
arguments; and the whole walk has a deadline. The final result is size-checked too.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from time import monotonic as _monotonic
from typing import Any

from jianmu_bt.tools.builtin.arithmetic_limits import (
    MAX_EXPRESSION_CHARS,
    SIZED_FUNCTIONS,
    CalculatorError,
    CalculatorLimits,
    Number,
    power,
    product_bits,
    sized_call,
    too_large,
)

__all__ = [
    "BINARY_OPERATORS",
    "COMPARISONS",
    "CONSTANTS",
    "FUNCTIONS",
    "FUNCTION_NAMES",
    "MAX_EXPRESSION_CHARS",
    "Calculator",
    "CalculatorError",
    "CalculatorLimits",
    "Number",
]

# How many nodes the walk visits between two looks at the clock.
_CLOCK_EVERY = 32
# A run of digits in the text (an integer literal, underscores allowed).
_DIGIT_RUN = re.compile(r"[0-9_]+")


#: Names an expression may use, and their values.
CONSTANTS: dict[str, float] = {
    "pi": math.pi,
    "e": math.e,
    "tau": math.tau,
    "inf": math.inf,
    "nan": math.nan,
}

#: Functions whose result is a float or no longer than their arguments, each at most about
#: quadratic in its (bounded) arguments' sizes: isqrt, gcd and int() are the slowest, well under a
#: millisecond at the default size limit.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "min": min,
    "max": max,
    "int": int,
    "float": float,
    "sqrt": math.sqrt,
    "isqrt": math.isqrt,
    "cbrt": math.cbrt,
    "exp": math.exp,
    "log": math.log,
    "log2": math.log2,
    "log10": math.log10,
    "log1p": math.log1p,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "atan2": math.atan2,
    "sinh": math.sinh,
    "cosh": math.cosh,
    "tanh": math.tanh,
    "asinh": math.asinh,
    "acosh": math.acosh,
    "atanh": math.atanh,
    "degrees": math.degrees,
    "radians": math.radians,
    "hypot": math.hypot,
    "floor": math.floor,
    "ceil": math.ceil,
    "trunc": math.trunc,
    "fabs": math.fabs,
    "fmod": math.fmod,
    "gcd": math.gcd,
}
FUNCTION_NAMES = tuple(sorted([*FUNCTIONS, *SIZED_FUNCTIONS]))

#: `+ - * / // %` as functions (the calculator sizes `*` before it runs and handles `**` apart);
#: shared with other safe evaluators (tree conditions).
BINARY_OPERATORS: dict[type[ast.operator], Callable[[Any, Any], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
    ast.Not: operator.not_,
}
#: The comparisons of numbers; shared with other safe evaluators (tree conditions add more).
COMPARISONS: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_REFUSED: dict[type[ast.AST], str] = {
    ast.Attribute: "attribute access (x.y)",
    ast.Subscript: "indexing and slicing",
    ast.Lambda: "lambda functions",
    ast.ListComp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.GeneratorExp: "generator expressions",
    ast.NamedExpr: "assignment expressions (:=)",
    ast.JoinedStr: "f-strings",
    ast.Starred: "starred arguments",
    ast.IfExp: "conditional expressions",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
    ast.List: "lists",
    ast.Tuple: "tuples",
    ast.Dict: "dictionaries",
    ast.Set: "sets",
    ast.UnaryOp: "the operator ~",
}
_ALLOWED_TEXT = (
    "the calculator accepts numbers, + - * / // % **, comparisons, and/or/not, parentheses, "
    f"the constants {', '.join(CONSTANTS)} and the functions {', '.join(FUNCTION_NAMES)}"
)


class Calculator:
    """Evaluates arithmetic expressions safely; `evaluate` raises CalculatorError on refusal.

    One instance may be shared between threads: an evaluation keeps its state on the stack.
    """

    __slots__ = ("limits", "max_digits")

    def __init__(self, limits: CalculatorLimits | None = None) -> None:
        self.limits = limits or CalculatorLimits()
        self.max_digits = self.limits.max_digits

    def evaluate(self, expression: str) -> Number:
        """The value of `expression` (an int, float or bool)."""
        if not isinstance(expression, str):
            raise CalculatorError(f"expected an expression as text, got {type(expression)}")
        limits = self.limits
        if len(expression) > limits.max_chars:
            raise CalculatorError(
                f"expression is {len(expression)} characters long; the limit is {limits.max_chars}"
            )
        text = expression.strip()
        if not text:
            raise CalculatorError("expression is empty")
        if len(text) > self.max_digits:  # parsing a long literal is quadratic: refuse it first
            longest = max(map(len, _DIGIT_RUN.findall(text)), default=0)
            if longest > self.max_digits:
                raise CalculatorError(
                    f"a number in the expression has {longest} digits; the limit is "
                    f"{self.max_digits} (max_int_bits {limits.max_int_bits})"
                )
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError as exc:
            raise CalculatorError(
                f"not a valid expression: {exc.msg} (at column {exc.offset})"
            ) from None
        except (ValueError, RecursionError, MemoryError) as exc:
            raise CalculatorError(
                f"expression cannot be parsed ({type(exc).__name__}): it is too deeply nested, "
                "has a number too long to convert, or contains invalid characters"
            ) from None
        walk = _Evaluation(limits)
        try:
            return walk.checked(walk.value(tree.body, 1))
        except RecursionError:  # only when called from an already deep stack
            raise CalculatorError("expression is nested too deeply for this call stack") from None


class _Evaluation:
    """The walk of one expression: counts nodes, bounds depth, sizes big operations first,
    and looks at the clock every few nodes.

    The common cases are handled inline: this runs for every node of every expression.
    """

    __slots__ = ("check_at", "deadline", "limits", "max_bits", "max_depth", "max_nodes", "nodes")

    def __init__(self, limits: CalculatorLimits) -> None:
        self.limits = limits
        self.max_bits = limits.max_int_bits
        self.max_depth = limits.max_depth
        self.max_nodes = limits.max_nodes
        self.nodes = 0
        # The fast path compares the node count with `check_at` only; past it, `checkpoint`
        # looks at the node limit and the clock and sets the next mark.
        self.check_at = _CLOCK_EVERY if self.max_nodes > _CLOCK_EVERY else self.max_nodes
        self.deadline = _monotonic() + limits.time_limit

    def count(self, depth: int) -> None:
        """Count one node; refuse past the node or depth limit or the deadline."""
        self.nodes += 1
        if self.nodes > self.check_at or depth > self.max_depth:
            self.checkpoint(depth)

    def checkpoint(self, depth: int) -> None:
        """The slow half of `count`: raise with the reason, or set the next mark."""
        if self.nodes > self.max_nodes:
            raise CalculatorError(f"expression has more than {self.max_nodes} parts; split it up")
        if depth > self.max_depth:
            raise CalculatorError(f"expression is nested more than {self.max_depth} levels deep")
        self.check_clock()
        self.check_at = min(self.nodes + _CLOCK_EVERY, self.max_nodes)

    def check_clock(self) -> None:
        """Refuse once the evaluation has run past its time limit."""
        if _monotonic() > self.deadline:
            raise CalculatorError(
                f"the evaluation ran past its time limit of {self.limits.time_limit} s; "
                "simplify the expression"
            )

    def value(self, node: ast.expr, depth: int) -> Number:
        self.nodes += 1
        if self.nodes > self.check_at or depth > self.max_depth:
            self.checkpoint(depth)
        # isinstance narrows the node's type for mypy; ast.parse makes no subclasses of these.
        if isinstance(node, ast.Constant):
            value = node.value
            if type(value) is int:
                if value.bit_length() > self.max_bits:
                    raise self.too_large()
                return value
            return self.constant(value)
        if isinstance(node, ast.BinOp):
            if type(node.left) is ast.BinOp:
                return self.chain(node, depth)
            left = self.value(node.left, depth + 1)
            return self.binary(node.op, left, self.value(node.right, depth + 1))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return self.checked(_UNARY[type(node.op)](self.value(node.operand, depth + 1)))
        if isinstance(node, ast.Compare):
            return self.compare(node, depth)
        if isinstance(node, ast.BoolOp):
            return self.boolean(node, depth)
        if isinstance(node, ast.Name):
            if node.id in CONSTANTS:
                return CONSTANTS[node.id]
            raise CalculatorError(f"unknown name {node.id!r}; {_ALLOWED_TEXT}")
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        what = _REFUSED.get(type(node), type(node).__name__)
        raise CalculatorError(f"not allowed: {what}; {_ALLOWED_TEXT}")

    def chain(self, node: ast.BinOp, depth: int) -> Number:
        """A left-leaning run of operators (`1 + 2 - 3 * 4 ...`) walked as a loop, so a long
        sum is not mistaken for deep nesting."""
        links = [node]
        while isinstance(node.left, ast.BinOp):
            node = node.left
            links.append(node)
            self.count(depth)
        result = self.value(node.left, depth + 1)
        for link in reversed(links):
            result = self.binary(link.op, result, self.value(link.right, depth + 1))
        return result

    @staticmethod
    def constant(value: Any) -> Number:
        if isinstance(value, int | float):  # bool is an int
            return value
        kind = "complex numbers" if isinstance(value, complex) else f"{type(value).__name__}"
        raise CalculatorError(f"not allowed: {kind} values; {_ALLOWED_TEXT}")

    def checked(self, value: Any) -> Number:
        """`value` if it is a real number within the size limit."""
        if isinstance(value, float):
            return value
        if isinstance(value, int):  # bool included
            if value.bit_length() > self.max_bits:
                raise self.too_large()
            return value
        if isinstance(value, complex):
            raise CalculatorError("the result is a complex number; only real numbers are supported")
        raise CalculatorError(f"unexpected result of type {type(value).__name__}")

    def too_large(self) -> CalculatorError:
        return too_large(self.max_bits)

    def binary(self, op: ast.operator, left: Number, right: Number) -> Number:
        """One operator. `+ -` add at most one bit, `/ // %` make nothing longer, `*` and `**`
        are sized before they run; the final result is checked as well."""
        kind = type(op)
        if kind is ast.Pow:
            return self.checked(power(left, right, self.max_bits))
        # A product of integers has at most as many bits as its factors together.
        if kind is ast.Mult and product_bits(left, right) > self.max_bits + 1:
            raise self.too_large()
        function = BINARY_OPERATORS.get(kind)
        if function is None:
            raise CalculatorError(f"not allowed: the operator {kind.__name__}; {_ALLOWED_TEXT}")
        try:
            return function(left, right)
        except ZeroDivisionError:
            raise CalculatorError("division by zero") from None
        except OverflowError:
            raise CalculatorError("the result is too large for a floating-point number") from None

    def compare(self, node: ast.Compare, depth: int) -> bool:
        left = self.value(node.left, depth + 1)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            if type(op) not in COMPARISONS:
                raise CalculatorError(f"the comparison {type(op).__name__} is not allowed")
            right = self.value(right_node, depth + 1)
            if not COMPARISONS[type(op)](left, right):
                return False
            left = right
        return True

    def boolean(self, node: ast.BoolOp, depth: int) -> Number:
        is_and = type(node.op) is ast.And
        result: Number = is_and
        for operand in node.values:
            result = self.value(operand, depth + 1)
            if bool(result) is not is_and:
                return result
        return result

    def call(self, node: ast.Call, depth: int) -> Number:
        if type(node.func) is not ast.Name:
            raise CalculatorError(f"only named math functions may be called; {_ALLOWED_TEXT}")
        name = node.func.id
        if name not in FUNCTIONS and name not in SIZED_FUNCTIONS:
            raise CalculatorError(f"unknown function {name!r}; {_ALLOWED_TEXT}")
        if node.keywords:
            raise CalculatorError(f"{name}() takes positional arguments only")
        args = [self.value(arg, depth + 1) for arg in node.args]
        try:
            if name in SIZED_FUNCTIONS:
                return self.checked(sized_call(name, args, self.limits))
            return self.checked(FUNCTIONS[name](*args))
        except CalculatorError:
            raise
        except ZeroDivisionError:
            raise CalculatorError(f"{name}(): division by zero") from None
        except OverflowError:
            raise CalculatorError(f"{name}(): the result is too large") from None
        except (TypeError, ValueError) as exc:
            raise CalculatorError(f"{name}(): {exc}") from None

"""SafeExpression: the conditions' expression language, a small, allow-listed part of Python's
expression syntax over a run's state, checked once and evaluated without `eval`:

| allowed | examples |
|---|---|
| names (state fields), literals, lists, tuples, dicts | `total`, `"done"`, `[1, 2]`, `None` |
| comparisons, chains, `is`, `is not`, `in` | `0 < n <= 10`, `x is not None`, `"a" in tags` |
| `and`, `or`, `not`, `a if c else b` | `ready and not failed` |
| arithmetic `+ - * / // % **` | `count * 2 + 1` |
| subscripts and slices | `result["status"]`, `items[0]`, `text[:10]` |
| functions | `len str int float bool min max abs round sum any all` |

Everything else — attribute access, other calls, comprehensions, lambdas, f-strings — is refused
when the expression is built, with the offending part's position. Evaluation is bounded: the
text's length, the number of AST nodes, the size of numbers (no `9**9**9`), strings and lists
an expression may build.
"""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Callable, Mapping
from typing import Any

from jianmu_bt.tools.builtin.arithmetic import BINARY_OPERATORS, COMPARISONS

MAX_LENGTH = 2000
"""Longest expression text, in characters."""
MAX_NODES = 300
"""Most AST nodes in one expression."""
MAX_INT_BITS = 4096
"""Largest integer an expression may compute (about 1,200 digits)."""
MAX_SIZE = 100_000
"""Longest string, list or tuple an expression may build."""

FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": len,
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "min": min,
    "max": max,
    "abs": abs,
    "round": round,
    "sum": sum,
    "any": any,
    "all": all,
}

_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    **COMPARISONS,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    **BINARY_OPERATORS,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.Not: operator.not_,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
_DESCRIBE = {
    ast.Attribute: "attribute access ('.')",
    ast.Lambda: "lambda",
    ast.ListComp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.GeneratorExp: "comprehensions",
    ast.JoinedStr: "f-strings",
    ast.NamedExpr: "':=' assignment",
    ast.Starred: "'*' unpacking",
    ast.Await: "await",
    ast.Set: "set literals",
}


class ExpressionError(ValueError):
    """An expression that is refused (when built) or fails (when evaluated).

    `offset` is the 0-based character offset of the problem in the text, or -1.
    """

    def __init__(self, message: str, offset: int = -1) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


class SafeExpression:
    """A checked expression: build once (refusals raise ExpressionError), evaluate many times.

    `names` are the state fields it reads (names not in call position).
    """

    __slots__ = ("_code", "_names", "text")

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise ExpressionError(f"an expression is text, got {type(text).__name__}")
        if len(text) > MAX_LENGTH:
            raise ExpressionError(f"the expression is longer than {MAX_LENGTH} characters")
        if not text.strip():
            raise ExpressionError("the expression is empty")
        self.text = text
        self._code, self._names = _checked(text)

    @property
    def names(self) -> frozenset[str]:
        """The state fields the expression reads (names not in call position)."""
        return frozenset(self._names)

    def evaluate(self, lookup: Callable[[str], Any]) -> Any:
        """The expression's value, names resolved by `lookup(name)`; ExpressionError on failure."""
        try:
            return _evaluate(self._code, lookup)
        except ExpressionError:
            raise
        except (
            TypeError,
            ValueError,
            ArithmeticError,
            LookupError,
            RecursionError,
        ) as exc:
            raise ExpressionError(f"{type(exc).__name__}: {exc}") from None

    @classmethod
    def of(cls, text: str) -> SafeExpression:
        """The checked expression of `text`: one object per distinct text, shared (it never
        changes, so the conditions of a tree built for each of many runs share one). A refusal
        raises as the constructor's does."""
        if cls is SafeExpression and isinstance(text, str) and len(text) <= MAX_LENGTH:
            return _shared(text)
        return cls(text)

    def __repr__(self) -> str:
        return f"SafeExpression({self.text!r})"


@functools.lru_cache(maxsize=1024)
def _shared(text: str) -> SafeExpression:
    return SafeExpression(text)


@functools.lru_cache(maxsize=1024)
def _checked(text: str) -> tuple[_Code, tuple[str, ...]]:
    """`text` parsed, checked and compiled, and the names it reads; one copy per distinct text
    (the code is made of tuples, so every expression of the same text shares it: a condition
    in a tree built for each of many runs is parsed once)."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        # no offset: the text ended too early, so point at its end
        offset = (exc.offset - 1) if exc.offset else len(text.strip())
        offset += len(text) - len(text.lstrip())
        detail = "" if exc.msg == "invalid syntax" else f" ({exc.msg})"
        raise ExpressionError(f"invalid syntax{detail}", offset) from None
    except (RecursionError, MemoryError, ValueError):
        raise ExpressionError("the expression is nested too deeply or is not text") from None
    compiler = _Compiler(shift=len(text) - len(text.lstrip()))
    code = compiler.compile(tree.body)
    return code, tuple(sorted(compiler.names))  # a tuple: a fraction of a set's size


# A checked expression is kept as nested tuples, `(tag, ...)`, not as its AST: a few hundred
# bytes instead of about 1.4 KiB (every AST node carries a dict of positions), and evaluated
# without a method lookup per node. Names are looked up and operators applied as the AST said.
_Code = tuple[Any, ...]


class _Compiler:
    """Checks an expression's AST against the allowed parts and turns it into the tuple form
    (see `_evaluate` for the tags), in one pass; collects the state names it reads."""

    def __init__(self, shift: int) -> None:
        self.shift = shift  # characters of leading blanks ast.parse did not see
        self.names: set[str] = set()
        self.parts = 0

    def refuse(self, node: ast.AST, message: str) -> ExpressionError:
        offset = getattr(node, "col_offset", -1)
        return ExpressionError(message, offset + self.shift if offset >= 0 else -1)

    def many(self, nodes: list[ast.expr]) -> tuple[_Code, ...]:
        return tuple(self.compile(item) for item in nodes)

    def compile(self, node: ast.AST) -> _Code:
        self.parts += 1
        if self.parts > MAX_NODES:
            raise ExpressionError(f"the expression has more than {MAX_NODES} parts; simplify it")
        if isinstance(node, ast.Name):
            self.names.add(node.id)
            return ("name", node.id)
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, (str, int, float, bool, type(None))):
                raise self.refuse(node, f"{type(node.value).__name__} literals are not allowed")
            return ("const", node.value)
        if isinstance(node, ast.Compare):
            steps = zip(node.ops, node.comparators, strict=True)
            return ("compare", self.compile(node.left), tuple(self.step(o, c) for o, c in steps))
        if isinstance(node, ast.BoolOp):
            tag = "and" if isinstance(node.op, ast.And) else "or"
            return (tag, self.many(node.values))
        if isinstance(node, ast.BinOp):
            op = self.operator(node.op, _BINARY, node)
            return ("binary", op, self.compile(node.left), self.compile(node.right))
        if isinstance(node, ast.UnaryOp):
            unary = _UNARY[self.operator(node.op, _UNARY, node)]
            return ("unary", unary, self.compile(node.operand))
        if isinstance(node, ast.IfExp):
            test, body, orelse = node.test, node.body, node.orelse
            return ("if", self.compile(test), self.compile(body), self.compile(orelse))
        if isinstance(node, (ast.List, ast.Tuple)):
            return ("list" if isinstance(node, ast.List) else "tuple", self.many(node.elts))
        if isinstance(node, ast.Dict):
            if any(key is None for key in node.keys):
                return ("unpack",)  # refused when evaluated, as the AST walker did
            pairs = zip(node.keys, node.values, strict=True)
            return ("dict", tuple((self.compile(k), self.compile(v)) for k, v in pairs))  # type: ignore[arg-type]
        if isinstance(node, ast.Subscript):
            return ("index", self.compile(node.value), self.compile(node.slice))
        if isinstance(node, ast.Slice):
            parts = (node.lower, node.upper, node.step)
            return ("slice", tuple(None if p is None else self.compile(p) for p in parts))
        if isinstance(node, ast.Call):
            return self.call(node)
        what = _DESCRIBE.get(type(node), type(node).__name__)
        raise self.refuse(node, f"{what} is not allowed in a condition")

    def step(self, op: ast.cmpop, comparator: ast.expr) -> tuple[Callable[[Any, Any], Any], _Code]:
        return _COMPARE[self.operator(op, _COMPARE, comparator)], self.compile(comparator)

    def operator(self, op: ast.AST, allowed: Mapping[Any, Any], where: ast.AST) -> Any:
        self.parts += 1
        if type(op) not in allowed:
            raise self.refuse(where, f"{type(op).__name__} is not allowed in a condition")
        return type(op)

    def call(self, node: ast.Call) -> _Code:
        func = node.func
        if isinstance(func, ast.Attribute):
            raise self.refuse(node, _DESCRIBE[ast.Attribute] + " is not allowed in a condition")
        if not isinstance(func, ast.Name) or func.id not in FUNCTIONS:
            shown = func.id if isinstance(func, ast.Name) else ast.unparse(func)
            raise self.refuse(
                node, f"'{shown}' cannot be called; allowed functions: {', '.join(FUNCTIONS)}"
            )
        if node.keywords:
            raise self.refuse(node, "keyword arguments are not allowed in a condition")
        self.parts += 1
        return ("call", FUNCTIONS[func.id], self.many(node.args))


def _evaluate(code: _Code, lookup: Callable[[str], Any]) -> Any:
    """The value of compiled `code`, with the size limits applied to what it builds."""
    tag = code[0]
    if tag == "const":
        return code[1]
    if tag == "name":
        return lookup(code[1])
    if tag == "compare":
        left = _evaluate(code[1], lookup)
        for compare, item in code[2]:
            right = _evaluate(item, lookup)
            if not compare(left, right):
                return False
            left = right
        return True
    if tag == "and" or tag == "or":
        value: Any = None
        for item in code[1]:
            value = _evaluate(item, lookup)
            if (tag == "and") != bool(value):
                return value
        return value
    if tag == "binary":
        left, right = _evaluate(code[2], lookup), _evaluate(code[3], lookup)
        _check_size(code[1], left, right)
        return _bounded(_BINARY[code[1]](left, right))
    if tag == "unary":
        return code[1](_evaluate(code[2], lookup))
    if tag == "if":
        return _evaluate(code[2] if _evaluate(code[1], lookup) else code[3], lookup)
    if tag == "index":
        value = _evaluate(code[1], lookup)
        if not isinstance(value, (str, list, tuple, dict)):
            raise ExpressionError(f"cannot index a {type(value).__name__}")
        return value[_evaluate(code[2], lookup)]
    if tag == "slice":
        return slice(*(None if part is None else _evaluate(part, lookup) for part in code[1]))
    if tag == "call":
        return _bounded(code[1](*(_evaluate(arg, lookup) for arg in code[2])))
    if tag == "list":
        return [_evaluate(item, lookup) for item in code[1]]
    if tag == "tuple":
        return tuple(_evaluate(item, lookup) for item in code[1])
    if tag == "dict":
        return {_evaluate(k, lookup): _evaluate(v, lookup) for k, v in code[1]}
    raise ExpressionError("'**' unpacking is not allowed in a condition")


def _check_size(op: type[ast.operator], left: Any, right: Any) -> None:
    """Refuse an operation whose result would be too large, before computing it."""
    if op is ast.Pow and _is_int(left) and _is_int(right):
        if right > 0 and abs(left) > 1 and abs(left).bit_length() * right > MAX_INT_BITS:
            raise ExpressionError(f"{left} ** {right} is too large (limit {MAX_INT_BITS} bits)")
    elif op is ast.Pow and isinstance(right, (int, float)) and abs(right) > 10_000:
        raise ExpressionError(f"the exponent {right} is too large")
    elif op is ast.Mult:
        sized, count = (left, right) if _is_int(right) else (right, left)
        if (
            isinstance(sized, (str, list, tuple))
            and _is_int(count)
            and len(sized) * count > MAX_SIZE
        ):
            raise ExpressionError(f"the result would be longer than {MAX_SIZE} items")
        if (
            _is_int(left)
            and _is_int(right)
            and abs(left).bit_length() + abs(right).bit_length() > MAX_INT_BITS
        ):
            raise ExpressionError(f"the product is too large (limit {MAX_INT_BITS} bits)")


def _bounded(value: Any) -> Any:
    if _is_int(value) and value.bit_length() > MAX_INT_BITS:
        raise ExpressionError(f"a number is too large (limit {MAX_INT_BITS} bits)")
    if isinstance(value, (str, list, tuple)) and len(value) > MAX_SIZE:
        raise ExpressionError(f"a value is longer than {MAX_SIZE} items")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)

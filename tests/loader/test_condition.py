"""Condition and its safe expressions: what is allowed, what is refused, and the bounds."""

import tracemalloc

import pytest
from py_trees.common import Status

from jianmu_bt.loader import load_tree
from jianmu_bt.nodes.condition import Condition
from jianmu_bt.runtime.expressions import MAX_LENGTH, ExpressionError, SafeExpression

STATE = {
    "total": 42,
    "name": "report.txt",
    "tags": ["a", "b"],
    "result": {"status": "ok", "items": [1, 2, 3]},
    "missing": None,
    "ratio": 0.5,
}


def value(text):
    return SafeExpression(text).evaluate(STATE.__getitem__)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("total > 40 and total <= 42", True),
        ("0 < total < 10", False),
        ("missing is None", True),
        ("missing is not None", False),
        ("'a' in tags and 'z' not in tags", True),
        ("not tags", False),
        ("total * 2 + 1", 85),
        ("total // 5 % 3 - -1", 3),
        ("total / 4", 10.5),
        ("2 ** 10", 1024),
        ("result['status'] == 'ok'", True),
        ("result['items'][-1]", 3),
        ("name[:6]", "report"),
        ("len(tags) + len(result['items'])", 5),
        ("min(result['items']) + max(1, 2) + abs(-3)", 6),
        ("int('7') + float('0.5') + round(ratio)", 7.5),
        ("str(total) + '!'", "42!"),
        ("bool(missing) or sum([1, 2]) == 3", True),
        ("any([False, True]) and all([])", True),
        ("'big' if total > 10 else 'small'", "big"),
        ("[total, (1, 2), {'k': 1}]", [42, (1, 2), {"k": 1}]),
    ],
)
def test_allowed_expressions_evaluate(text, expected):
    assert value(text) == expected


@pytest.mark.parametrize(
    ("text", "message", "offset"),
    [
        ("name.upper()", "attribute access ('.') is not allowed", 0),
        ("total > 1 and __import__('os')", "'__import__' cannot be called", 14),
        ("open('/etc/passwd')", "'open' cannot be called", 0),
        ("(lambda: 1)()", "cannot be called", 0),
        ("[x for x in tags]", "comprehensions is not allowed", 0),
        ("f'{total}'", "f-strings is not allowed", 0),
        ("(y := 3)", "':=' assignment is not allowed", 1),
        ("max(tags, key=len)", "keyword arguments are not allowed", 0),
        ("{1, 2}", "set literals is not allowed", 0),
        ("total >", "invalid syntax", 7),
        ("b'raw' == name", "bytes literals are not allowed", 0),
    ],
)
def test_refused_expressions_say_what_and_where(text, message, offset):
    with pytest.raises(ExpressionError) as caught:
        SafeExpression(text)
    assert message in caught.value.message
    assert caught.value.offset == offset


def test_size_limits_are_enforced_before_computing():
    with pytest.raises(ExpressionError, match="longer than"):
        SafeExpression("1 + " * MAX_LENGTH + "1")
    with pytest.raises(ExpressionError, match="more than"):
        SafeExpression(" + ".join(["total"] * 200))
    for text in ("9 ** 9 ** 9", "'x' * 10 ** 9", "[0] * 10 ** 7", "(2 ** 4000) * (2 ** 4000)"):
        tracemalloc.start()
        try:
            with pytest.raises(ExpressionError, match=r"too large|longer than"):
                value(text)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 2 << 20, f"{text}: {peak} bytes allocated before refusing"  # not computed


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("missing > 3", "TypeError"),
        ("total / 0", "ZeroDivisionError"),
        ("result['nope']", "KeyError"),
        ("total[0]", "cannot index a int"),
        ("int('x')", "ValueError"),
    ],
)
def test_runtime_failures_are_expression_errors(text, fragment):
    with pytest.raises(ExpressionError, match=fragment):
        value(text)


def test_the_condition_node_succeeds_fails_and_explains():
    tree = load_tree("""
state:
  total: {type: integer, default: 5}
  label: {type: string, default: null}
root:
  sequence:
    children:
      - condition: {name: Positive, check: "total > 0"}
      - selector:
          children:
            - condition: {name: Broken, check: "label > 3"}
            - condition: {name: Big, check: "total > 100"}
            - condition: {name: Small, check: "total < 10"}
""")
    try:
        result = tree.run()
        assert result.ok
        nodes = {b.name: b for b in tree.nodes.values()}
        assert isinstance(nodes["Broken"], Condition)
        assert nodes["Broken"].feedback_message.startswith("cannot evaluate 'label > 3': TypeError")
        assert nodes["Big"].feedback_message == "false: total > 100"
        assert nodes["Positive"].status == Status.SUCCESS
    finally:
        tree.close()

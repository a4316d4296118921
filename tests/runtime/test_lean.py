"""Lean behaviours keep no per-node generator, qualified name or formatted logger, and still
behave and log exactly as py_trees' own."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable, Iterator

import py_trees
import pytest
from py_trees.common import Status

from jianmu_bt.nodes.condition import Condition, SafeExpression
from jianmu_bt.runtime.expressions import ExpressionError
from jianmu_bt.runtime.lean import LeanBehaviour, lean


class Plain(py_trees.behaviour.Behaviour):
    def update(self) -> Status:
        return Status.SUCCESS


class Lean(LeanBehaviour, Plain):
    pass


# Where the measured objects are made: only allocations there count, so a thread another test
# left running (tracemalloc sees every thread) cannot blur the numbers.
MADE_IN = ("*/py_trees/*", "*/jianmu_bt/runtime/*", "*/uuid.py", "*/ast.py", __file__)


def bytes_per_item(make: Callable[[int], object], count: int = 200, rounds: int = 3) -> float:
    """Bytes a made item keeps, counted where such items are made (MADE_IN); the least of
    `rounds` measurements, since a thread another test left running may allocate in the same
    files meanwhile (it can only add to a measurement, never take away). Each round makes new
    items (other numbers), so nothing a round caches helps the next."""
    return min(_bytes_per_item_once(make, count, r * count) for r in range(rounds))


def _bytes_per_item_once(make: Callable[[int], object], count: int, first: int) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        kept = [make(i) for i in range(first, first + count)]
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    assert len(kept) == count
    only = [tracemalloc.Filter(True, pattern) for pattern in MADE_IN]
    grown = after.filter_traces(only).compare_to(before.filter_traces(only), "filename")
    return sum(stat.size_diff for stat in grown) / count


@pytest.fixture
def debug_logging() -> Iterator[None]:
    level = py_trees.logging.level
    py_trees.logging.level = py_trees.logging.Level.DEBUG
    yield
    py_trees.logging.level = level


def test_a_lean_node_keeps_less_than_half_of_a_plain_one() -> None:
    plain = bytes_per_item(lambda i: Plain(f"node {i}"))
    lean_node = bytes_per_item(lambda i: Lean(f"node {i}"))
    assert lean_node < plain * 0.7, (lean_node, plain)


def test_lean_composites_are_the_py_trees_classes_by_name_and_type() -> None:
    sequence = lean(py_trees.composites.Sequence)("seq", memory=True, children=[Lean("a")])
    assert isinstance(sequence, py_trees.composites.Sequence)
    assert type(sequence).__name__ == "Sequence"
    assert sequence.qualified_name == "Sequence/seq"
    assert lean(py_trees.composites.Sequence) is type(sequence)  # one class per py_trees class
    sequence.tick_once()
    assert sequence.status is Status.SUCCESS


def test_iterator_still_ticks_the_node() -> None:
    node = Lean("a")
    statuses = [n.status for n in node.iterator]
    assert statuses == [Status.SUCCESS]
    assert "iterator" not in vars(node)


def test_logs_read_as_py_trees_logs(
    debug_logging: None, capsys: pytest.CaptureFixture[str]
) -> None:
    for cls in (Plain, Lean):
        root = py_trees.composites.Sequence("root", memory=True, children=[cls("worker")])
        root.tick_once()
        cls("worker").logger.error("broken")
    plain_out, lean_out = capsys.readouterr().out.split("Sequence.tick()", 2)[1:]
    assert "worker               : Plain.tick()" in plain_out
    assert "worker               : Lean.tick()" in lean_out
    assert "worker               : broken" in lean_out


def test_debug_messages_are_not_formatted_when_not_shown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    node = Lean("quiet")
    node.tick_once()
    node.logger.debug("hidden")
    assert capsys.readouterr().out == ""


def test_a_checked_expression_is_small_and_evaluates_like_python() -> None:
    size = bytes_per_item(lambda i: SafeExpression(f"k{i} > 0 and k{i} < 10"))
    tree_size = bytes_per_item(lambda i: __import__("ast").parse(f"k{i} > 0 and k{i} < 10"))
    assert size < tree_size / 2, (size, tree_size)
    values = {"k": 3, "items": [1, 2, 3], "name": "ab"}
    for text in ("k > 2 and k < 4", "items[1:] == [2, 3]", "max(items) * k", "name * 2"):
        assert SafeExpression(text).evaluate(values.__getitem__) == eval(text, {}, values)


def test_a_condition_without_renames_shares_an_empty_mapping() -> None:
    first = Condition("a", "x > 1", rename={"x": "x"})
    second = Condition("b", "y > 1")
    assert first.rename is second.rename and not first.rename
    assert Condition("c", "x > 1", rename={"x": "sub/x"}).reads == frozenset({"sub/x"})


def test_a_leaf_shares_an_empty_children_tuple_and_refuses_children() -> None:
    first, second = Condition("a", "True"), Condition("b", "False")
    assert first.children == () and first.children is second.children
    assert [node.name for node in first.iterate()] == ["a"]
    with pytest.raises(TypeError, match="leaf behaviour"):
        first.children = [second]


def test_blackboards_are_made_on_first_use_and_clients_still_attach() -> None:
    node = Condition("c", "True")
    assert "_blackboard_list" not in vars(node)  # nothing kept until something reads it
    client = node.attach_blackboard_client(name="native")
    assert node.blackboards == [client]
    composite = lean(py_trees.composites.Sequence)("s", memory=True)
    assert composite.blackboards == [] and composite.children == []


def test_conditions_of_the_same_text_share_their_checked_code() -> None:
    first, second = SafeExpression("x > 1 and y"), SafeExpression("x > 1 and y")
    assert first._code is second._code and first.names == frozenset({"x", "y"})


def test_a_lean_leaf_has_every_attribute_py_trees_gives_a_behaviour() -> None:
    # LeanLeaf.__init__ does not call py_trees' Behaviour.__init__: whatever that one sets (in
    # the installed py_trees), a lean leaf must answer alike.
    plain = Plain("node")
    leaf = Condition("node", "True")
    for name, value in vars(plain).items():
        mine = getattr(leaf, name)
        if name == "id":
            assert type(mine) is type(value) and mine != value and mine == leaf.id
        elif name in ("iterator", "logger"):
            assert type(mine).__name__ in ("generator", "NodeLogger"), (name, mine)
        elif name == "qualified_name":
            assert mine == "Condition/node"
        elif name == "children":
            assert list(mine) == value
        else:
            assert mine == value, name
    with pytest.raises(TypeError, match="should be a string"):
        Condition(3, "True")  # type: ignore[arg-type]


def test_nodes_of_one_name_share_a_logger() -> None:
    first, second = Lean("a"), Condition("a", "True")
    assert type(first.logger).__name__ == "NodeLogger" and first.logger is second.logger
    assert Lean("b").logger is not first.logger and first.logger.prefix == Plain("a").logger.prefix


def test_conditions_of_the_same_text_share_one_expression_and_refuse_alike() -> None:
    first, second = Condition("a", "x > 1"), Condition("b", "x > 1")
    assert first.expression is second.expression and first.expression is not SafeExpression("x > 1")
    for bad in ("x >", "__import__('os')", "x" * 3000):
        with pytest.raises(ExpressionError) as shared:
            SafeExpression.of(bad)
        with pytest.raises(ExpressionError) as made:
            SafeExpression(bad)
        assert str(shared.value) == str(made.value)


def test_a_leaf_mixed_with_another_behaviour_class_runs_that_class_init() -> None:
    class Counted(py_trees.behaviour.Behaviour):
        def __init__(self, name: str) -> None:
            super().__init__(name)
            self.made = True

    class Mixed(Condition, Counted):
        pass

    node = Mixed("m", "True")
    assert node.made and node.name == "m" and node.status is Status.INVALID
    assert type(node.logger).__name__ == "NodeLogger" and "iterator" not in vars(node)
    assert Condition._bare_init and not Mixed._bare_init

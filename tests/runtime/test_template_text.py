"""References inside longer text: the value's text is the same for equal values, so a resumed
run renders the same arguments as the run it continues (their digests are compared)."""

from decimal import Decimal

from jianmu_bt.runtime.templates import render


def test_a_set_in_text_is_rendered_sorted_whatever_its_order():
    one = {"tags": {"beta", "alpha", "gamma"}, "n": Decimal("1.10")}
    other = {"tags": {"gamma", "alpha", "beta"}, "n": Decimal("1.10")}
    text = render("use {tags} and {n} of {all}", lambda key: {**one, "all": one}[key])
    again = render("use {tags} and {n} of {all}", lambda key: {**other, "all": other}[key])
    assert text == again
    assert text.startswith('use ["alpha", "beta", "gamma"] and "1.10" of {"tags": ["alpha"')


def test_a_whole_reference_keeps_the_value_itself():
    tags = frozenset({"a"})
    assert render("{tags}", {"tags": tags}.__getitem__) is tags

"""The one `module:attr` resolver: its rules and its messages."""

import sys

import pytest

from jianmu_bt.tools.references import ReferenceProblem, is_reference, resolve_reference


@pytest.fixture
def modules(tmp_path):
    (tmp_path / "ref_target.py").write_text("VALUE = 1\nclass Box:\n    inner = 2\n")
    (tmp_path / "ref_broken.py").write_text("raise RuntimeError('boom')\n")
    yield tmp_path
    for name in ("ref_target", "ref_broken"):
        sys.modules.pop(name, None)


def test_resolves_a_dotted_attribute_from_a_search_path(modules):
    assert resolve_reference("ref_target:Box.inner", [modules]) == 2
    assert str(modules) not in sys.path  # the search path is put back


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("ref_target:VALUEE", "'ref_target' has no attribute 'VALUEE' (did you mean 'VALUE'?)"),
        ("ref_target:Box.outer", "'ref_target:Box' has no attribute 'outer'"),
        ("ref_missing:x", "no module named 'ref_missing'"),
        ("ref_broken:x", "importing 'ref_broken' raised RuntimeError: boom"),
        ("calculator", "expected the form module:attribute"),
        ("ref_target:", "expected the form module:attribute"),
    ],
)
def test_every_failure_names_the_reference_and_the_reason(modules, reference, message):
    with pytest.raises(ReferenceProblem) as caught:
        resolve_reference(reference, [modules])
    assert str(caught.value).startswith(f"cannot resolve '{reference}': ")
    assert message in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_is_reference_tells_names_from_references():
    assert is_reference("pkg.mod:tool")
    assert not is_reference("calculator")
    assert not is_reference(":x")

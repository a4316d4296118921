"""`journaled.recordable`: a tool result whose output a run cannot record becomes a failed result
that says where the value is, its type, and that the call ran."""

from decimal import Decimal

from jianmu_bt.nodes.calling import MeteredResult
from jianmu_bt.nodes.journaled import recordable, result_document
from jianmu_bt.store.codec import dumps, loads
from jianmu_bt.tools import ToolResult


class Opaque:
    """A value of a class the run's encoding does not know."""


def test_a_recordable_result_is_the_same_result():
    result = ToolResult("pay", True, {"paid": Decimal("1.10"), "at": (1, 2)}, None)
    assert recordable(result) is result
    assert loads(dumps(result_document(result))) == result_document(result)


def test_an_unrecordable_output_becomes_a_failed_result_naming_where_and_what():
    found = recordable(ToolResult("pay", True, {"items": [1, 2, Opaque()]}, None))
    assert (found.tool, found.ok, found.output) == ("pay", False, None)
    assert found.error.startswith("Error: pay ran (its effects happened), but its result cannot")
    assert "will not run again" in found.error
    assert "output['items'][2] is of type test_recordable.Opaque" in found.error
    assert dumps(result_document(found))  # the failed result itself is recordable


def test_a_metered_result_keeps_its_usage():
    found = recordable(MeteredResult("agent", True, Opaque(), None, usage={"requests": 2}))
    assert isinstance(found, MeteredResult) and found.usage == {"requests": 2}
    assert not found.ok and "output is of type" in found.error
    bad_usage = recordable(MeteredResult("agent", True, "ok", None, usage={"x": Opaque()}))
    assert not bad_usage.ok and "usage['x']" in bad_usage.error

"""The run's typed JSON encoding: every recorded value comes back equal, or is refused where it is.

Through the encoding alone, and through both stores (journal arguments and results, checkpoint
state, run inputs).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
from decimal import Decimal
from typing import Any

import pytest
from store_helpers import entry, make_run
from typed_values import EVERY_TYPE, PARIS, Colour, Level, Order, Point

from jianmu_bt.store import StoreError, digest_arguments
from jianmu_bt.store.codec import (
    TAGS,
    UnreadableValueError,
    UnrecordableValueError,
    canonical,
    check,
    dumps,
    loads,
    to_json,
)

CASES = list(EVERY_TYPE.items())


def _same(found: Any, expected: Any) -> None:
    """Equal, and of the same types all the way down (IntEnum.HIGH == 2, yet they differ)."""
    assert found == expected
    assert canonical(found) == canonical(expected)


@pytest.mark.parametrize(("name", "value"), CASES, ids=[name for name, _ in CASES])
def test_every_type_round_trips_to_an_equal_value(name, value):
    text = dumps(value)
    _same(loads(text), value)
    _same(loads(text.encode()), value)  # bytes read as UTF-8 text
    json.loads(text, parse_constant=_no_constants)  # standard JSON, no NaN or Infinity tokens


def _no_constants(name: str) -> None:
    raise AssertionError(f"{name} in the text: not standard JSON")


def test_plain_json_is_written_as_json_writes_it_and_not_copied():
    document = {"b": [1, 2.5, None, True, {"x": "建木 ☃"}], "a": {"nested": []}, "$two": 1, "$k": 2}
    assert dumps(document) == json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    assert to_json(document) is document  # nothing to change: the very same objects
    assert loads(dumps(document)) == document
    assert canonical(document) == json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )


def test_the_tags():
    assert set(TAGS) == {
        "$decimal", "$datetime", "$date", "$time", "$timedelta", "$uuid", "$set", "$frozenset",
        "$tuple", "$bytes", "$bytearray", "$enum", "$dataclass", "$model", "$float", "$dict",
    }  # fmt: skip
    assert dumps(Decimal("1.10")) == '{"$decimal":"1.10"}'
    assert (
        dumps(EVERY_TYPE["datetime_zone"])
        == '{"$datetime":"2026-07-01T12:00:00+02:00[Europe/Paris]"}'
    )
    assert dumps((1, 2)) == '{"$tuple":[1,2]}'
    assert dumps(b"\x00") == '{"$bytes":"AA=="}'
    assert dumps(Colour.RED) == '{"$enum":["typed_values:Colour","red"]}'
    assert dumps(Point(Decimal(1))) == (
        '{"$dataclass":["typed_values:Point",{"x":{"$decimal":"1"},"y":{"$tuple":[]}}]}'
    )
    assert dumps(float("nan")) == '{"$float":"nan"}'
    assert dumps({1: 2}) == '{"$dict":[[1,2]]}'


def test_a_dict_that_looks_like_a_tag_is_escaped_and_comes_back():
    for value in ({"$set": [1]}, {"$unknown": 1}, {"$": {"$ref": "#/a"}}, [{"$tuple": []}]):
        text = dumps(value)
        assert '"$dict"' in text
        assert loads(text) == value
    assert dumps({"$ref": "a", "type": "object"}) == '{"$ref":"a","type":"object"}'  # two keys


def test_zoned_datetimes_keep_their_zone_and_fold():
    late = loads(dumps(EVERY_TYPE["datetime_zone_second_fold"]))
    assert (
        late.tzinfo is PARIS and late.fold == 1 and late.utcoffset() == datetime.timedelta(0, 3600)
    )
    early = loads(dumps(late.replace(fold=0)))
    assert early.fold == 0 and early.utcoffset() == datetime.timedelta(0, 7200)
    fixed = loads(dumps(EVERY_TYPE["datetime_offset"]))
    assert fixed.utcoffset() == datetime.timedelta(hours=5, minutes=30)
    assert loads(dumps(EVERY_TYPE["datetime_naive"])).tzinfo is None


def test_nan_comes_back_as_nan():
    (found,) = loads(dumps([float("nan")]))
    assert math.isnan(found)
    assert math.isnan(loads("NaN"))  # text written before the encoding (Python's json) still reads


def test_subclasses_of_json_types_are_written_as_their_base_type():
    class Text(str):
        pass

    assert loads(dumps({"a": Text("x")})) == {"a": "x"}
    assert type(loads(dumps([Level.LOW]))[0]) is Level  # an enum stays an enum


def test_canonical_text_does_not_depend_on_order():
    assert canonical({"s": {"b", "a", "c"}}) == canonical({"s": {"c", "b", "a"}})
    assert canonical({2: "x", 1: "y"}) == canonical({1: "y", 2: "x"})
    assert canonical({"b": 1, "a": 2}) == '{"a":2,"b":1}'
    assert canonical({1.5, float("inf")}) == canonical({float("inf"), 1.5})


def test_digest_of_plain_json_is_pinned():
    # The digest every earlier version gave these arguments: stores written before keep theirs.
    arguments = {"path": "notes/建木.txt", "lines": [1, 2.5, True, None], "options": {"z": -0.0}}
    assert digest_arguments("write_file", arguments) == "3cedc4cf3b2a92794766caf60fa460e8"
    assert digest_arguments("llm", 3) == "a0181c52bdb60aed1286d60276ea1a8b"


def test_digests_of_typed_values_are_equal_after_a_round_trip():
    for value in EVERY_TYPE.values():
        arguments = {"value": value}
        assert digest_arguments("t", loads(dumps(arguments))) == digest_arguments("t", arguments)
    assert digest_arguments("t", {"n": 3}) != digest_arguments("t", {"n": 3.0})


class _Opaque:
    pass


@pytest.mark.parametrize(
    ("value", "where", "located", "kind"),
    [
        ({"output": {"items": [1, 2, _Opaque()]}}, None, "output['items'][2]", "_Opaque"),
        ({"state": {"plan": {"steps": (1, _Opaque())}}}, None, "state['plan']['steps'][1]", ""),
        ({"when": _Opaque()}, "arguments", "arguments['when']", "_Opaque"),
        (Point(_Opaque()), "output", "output.x", "_Opaque"),  # type: ignore[arg-type]
        ({"tags": {_Opaque()}}, "output", "output['tags']{member}", "_Opaque"),
        ({_Opaque(): 1}, "output", "output{key}", "_Opaque"),
        ([print], "output", "output[0]", "builtin_function_or_method"),
        (1j, "output", "output", "complex"),
    ],
)
def test_a_value_without_an_exact_form_is_refused_where_it_is(value, where, located, kind):
    with pytest.raises(UnrecordableValueError) as caught:
        dumps(value, where) if where is None else check(value, where)
    message = str(caught.value)
    assert isinstance(caught.value, TypeError)
    assert message.startswith(f"{located} is of type ")
    assert kind in message and caught.value.where == located
    assert "a run records JSON values" in message and "pydantic models" in message


def test_a_class_a_resume_could_not_find_is_refused_when_recorded():
    @dataclasses.dataclass
    class Local:
        x: int

    with pytest.raises(
        UnrecordableValueError, match=r"output\['when'\] is of type .*Local.* inside a"
    ):
        check({"when": Local(1)}, "output")
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(UnrecordableValueError, match="contains itself"):
        dumps(cycle)


def test_an_unknown_tag_or_a_missing_class_cannot_be_read():
    with pytest.raises(UnreadableValueError, match=r"unknown tag '\$later'") as caught:
        loads('{"a":{"$later":1}}')
    assert isinstance(caught.value, StoreError) and isinstance(caught.value, ValueError)
    with pytest.raises(UnreadableValueError, match=r"\$model value: class gone_module:Thing"):
        loads('{"$model":["gone_module:Thing",{}]}')
    with pytest.raises(UnreadableValueError, match=r"\$dataclass value: class typed_values:Nope"):
        loads('{"$dataclass":["typed_values:Nope",{}]}')
    with pytest.raises(UnreadableValueError, match="typed_values:Order, which is not a dataclass"):
        loads('{"$dataclass":["typed_values:Order",{}]}')
    with pytest.raises(UnreadableValueError, match=r"\$decimal value cannot be read back"):
        loads('{"$decimal":[1]}')


# -- through the stores ---------------------------------------------------------------------


def test_every_type_round_trips_through_the_store(store):
    """Run inputs, checkpoint state, journal arguments and results: each comes back equal."""
    values = dict(EVERY_TYPE)
    run = make_run("r1", inputs=values)
    store.create_run(run, checkpoint={"state": values, "progress": {}})
    arguments = {"order": values["model"], "when": values["datetime_zone"], "all": values}
    row = entry("a", "done", arguments=arguments, result={"ok": True, "output": values})
    store.append("r1", None, [row], checkpoint={"state": {"seen": values["set"]}})
    _same(store.get_run("r1").inputs, values)
    first, second = store.history("r1")
    _same(first.data["state"], values)
    _same(second.data["state"], {"seen": values["set"]})
    (got,) = store.journal_log("r1")
    _same(got.arguments, arguments)
    _same(got.result["output"], values)
    assert got.digest == digest_arguments("echo", got.arguments)  # the replayed digest matches


def test_a_refused_value_writes_nothing(store):
    store.create_run(make_run("r1"))
    bad = {"state": {"plan": Order.model_construct(total=_Opaque())}}
    with pytest.raises(UnrecordableValueError, match=r"^state\['plan'\]\.total is of type"):
        store.append("r1", None, [entry("a")], checkpoint=bad)
    assert store.journal_log("r1") == [] and len(store.history("r1")) == 0

"""Values of every type the run's typed encoding records, with module-level classes (a recorded
enum, dataclass or model names its class, and a resume finds it again by that name)."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import uuid
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from pydantic import BaseModel


class Colour(enum.Enum):
    """A plain enum."""

    RED = "red"
    BLUE = ("blue", 2)


class Level(enum.IntEnum):
    """An enum that is also an int (json alone would write it as its number)."""

    LOW = 1
    HIGH = 2


@dataclasses.dataclass(frozen=True)
class Point:
    """A frozen dataclass with a typed field and one `__init__` does not take."""

    x: Decimal
    y: tuple[int, ...] = ()
    label: str = dataclasses.field(default="", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "label", f"{self.x}/{len(self.y)}")


class Order(BaseModel):
    """A pydantic model holding typed values, a nested model and a dataclass."""

    id: uuid.UUID
    total: Decimal
    placed: datetime.datetime
    tags: set[str] = set()
    where: Point | None = None
    extra: dict[str, Any] = {}


class Basket(BaseModel):
    """A model nesting another, with an `Any` field holding a model."""

    orders: list[Order]
    note: Any = None


PARIS = ZoneInfo("Europe/Paris")

EVERY_TYPE: dict[str, Any] = {
    "decimal": Decimal("1.10"),
    "decimal_negative_zero": Decimal("-0.000"),
    "datetime_naive": datetime.datetime(2026, 3, 1, 10, 0, 0, 123456),
    "datetime_utc": datetime.datetime(2026, 3, 1, 10, 0, tzinfo=datetime.UTC),
    "datetime_offset": datetime.datetime(
        2026, 3, 1, 10, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=5, minutes=30))
    ),
    "datetime_zone": datetime.datetime(2026, 7, 1, 12, 0, tzinfo=PARIS),
    "datetime_zone_second_fold": datetime.datetime(2026, 10, 25, 2, 30, tzinfo=PARIS, fold=1),
    "date": datetime.date(2026, 2, 28),
    "time": datetime.time(23, 59, 59, 999999),
    "time_offset": datetime.time(8, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=-3))),
    "timedelta": datetime.timedelta(days=-2, seconds=3, microseconds=4),
    "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "set": {1, "two", (3, 4)},
    "frozenset": frozenset({"a", "b"}),
    "empty_set": set(),
    "bytes": b"\x00\xff binary",
    "bytearray": bytearray(b"\x01\x02"),
    "tuple": (1, "a", (2, 3), [4]),
    "enum": Colour.BLUE,
    "int_enum": Level.HIGH,
    "dataclass": Point(Decimal("2.5"), (1, 2)),
    "model": Order(
        id=uuid.UUID(int=7),
        total=Decimal("99.90"),
        placed=datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=PARIS),
        tags={"x", "y"},
        where=Point(Decimal("1"), ()),
        extra={"$ref": "#/a", "n": (1,)},
    ),
    "nested_model": Basket(
        orders=[],
        note=Order(id=uuid.UUID(int=1), total=Decimal(0), placed=datetime.datetime(2026, 1, 1)),
    ),
    "int_keys": {1: "one", (2, 3): "pair", None: "none", Level.HIGH: "high"},
    "tag_like": {"$set": [1, 2]},
    "dollar_key": {"$": {"$ref": "#/x"}},
    "floats": [0.5, -0.0, 1e300],
    "infinities": [float("inf"), float("-inf")],
    "deep": [{"a": ({"b": {Decimal("1"), Decimal("2")}},)}],
}
"""One value of each kind the encoding records, keyed by a name for test ids."""

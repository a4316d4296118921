"""Tools that take and return values JSON cannot hold exactly, for the exact-values tests.

Each writes one line to the ledger (JIANMU_LEDGER), so a test can count its side effects; `settle`
refuses arguments that did not come back with their exact types. `hold` waits for the file named
by JIANMU_STEP_GATE (after creating `<ledger>.waiting`), so a test can kill the process inside it.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import os
import time
import uuid
from decimal import Decimal
from typing import Annotated, Any
from zoneinfo import ZoneInfo

from ledger_tools import write_line
from pydantic import BaseModel

from jianmu_bt import tool
from jianmu_bt.tools import Injected


class Tier(enum.Enum):
    """An enum a tool returns."""

    GOLD = "gold"


@dataclasses.dataclass(frozen=True)
class Line:
    """A dataclass a tool returns."""

    sku: str
    qty: Decimal


class Receipt(BaseModel):
    """A pydantic model a tool returns."""

    id: uuid.UUID
    total: Decimal
    at: datetime.datetime
    lines: tuple[Line, ...]


def quote_value() -> dict[str, Any]:
    """What `quote` returns: one value of each kind."""
    return {
        "amount": Decimal("10.10"),
        "due": datetime.date(2026, 3, 31),
        "at": datetime.datetime(2026, 3, 29, 1, 30, tzinfo=ZoneInfo("Europe/Paris")),
        "tags": {"b", "a", "c"},
        "frozen": frozenset({1, 2}),
        "blob": b"\x00\xffraw",
        "pair": (1, "two"),
        "tier": Tier.GOLD,
        "line": Line("x-1", Decimal("2")),
        "receipt": Receipt(
            id=uuid.UUID(int=42),
            total=Decimal("20.20"),
            at=datetime.datetime(2026, 3, 29, tzinfo=datetime.UTC),
            lines=(Line("y", Decimal("1.5")),),
        ),
        "wait": datetime.timedelta(minutes=5),
        "keys": {1: "one", None: "none"},  # (a tuple key: the CLI summary cannot show it)
        "looks_like_a_tag": {"$set": "not a set"},
    }


@tool(effect_tags=["ledger"])
def quote(item: str) -> Any:
    """Quote `item` (a side effect): typed values JSON alone cannot hold."""
    write_line(f"quote {item}")
    return quote_value()


@tool(effect_tags=["ledger"])
def settle(quote: Any, times: float) -> Any:
    """Settle a quote `times` times (a side effect); its arguments must be exact."""
    expected = quote_value()
    if quote != expected or {k: type(v) for k, v in quote.items()} != {
        k: type(v) for k, v in expected.items()
    }:
        raise ValueError(f"the quote did not come back exact: {quote!r}")
    if type(times) is not float:
        raise ValueError(f"times is {type(times).__name__}, not float")
    write_line(f"settle {times!r}")
    return {"paid": quote["amount"] * Decimal(times), "receipt": quote["receipt"]}


@tool(effect_tags=["deploy"])
def deploy(target: str) -> str:
    """Deploy (a side effect held for approval by the test tree's guard)."""
    write_line(f"deploy {target}")
    return f"deployed {target}"


@tool(effect_tags=["ledger"], idempotent=True)
def hold(name: str, idempotency_key: Annotated[str, Injected]) -> str:
    """Wait at the gate, then write `name` once per idempotency key (safe to run again)."""
    ledger = os.environ["JIANMU_LEDGER"]
    open(ledger + ".waiting", "w").close()
    gate = os.environ.get("JIANMU_STEP_GATE")
    deadline = time.monotonic() + 120  # a hang guard should the test never open the gate
    while gate and not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.01)
    with open(ledger) as lines:
        if any(line.strip().endswith(idempotency_key) for line in lines):
            return f"already held {name}"
    write_line(f"{name} {idempotency_key}")
    return f"held {name}"

"""A virtual clock for the sync-tool placement (jianmu_bt.tools.placement) in tests."""

from __future__ import annotations

from jianmu_bt.tools.placement import SLOW_CALL

SLOW = SLOW_CALL * 5  # comfortably more than the threshold


class VirtualClock:
    """The placement's clock in these tests: time passes only in `advance` (a slow call)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float = SLOW) -> None:
        self.now += seconds


def install(monkeypatch) -> VirtualClock:
    """Make a fresh VirtualClock the placement's clock for one test."""
    from jianmu_bt.tools import placement

    virtual = VirtualClock()
    monkeypatch.setattr(placement, "_clock", virtual)
    return virtual

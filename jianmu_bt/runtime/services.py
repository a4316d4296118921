"""What the tree nodes need from the run's guard: the `RunGuard` protocol.

A run's guard is a `jianmu_bt.guard.GuardEnforcer`, or a `LayeredGuard` (an agent's own guard
under the tree's); both fit this protocol, and so does any object with the same methods. The
nodes ask it about calls before they run, record each call that ran, and save its state.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from jianmu_bt.guard import ApprovalStore, GuardVerdict
    from jianmu_bt.tools import Tool, ToolCall, ToolSet


class RunGuard(Protocol):
    """The guard as the tree nodes and the runner use it."""

    @property
    def approvals(self) -> ApprovalStore:
        """Where held calls are recorded and reviewers decide them."""
        ...

    def check(self, call: ToolCall, tool: Tool | None = None) -> GuardVerdict:
        """The verdict for one call (a PENDING one is recorded in `approvals`)."""
        ...

    def preflight(self, calls: Iterable[ToolCall], toolset: ToolSet) -> list[GuardVerdict]:
        """One verdict per call of a batch, in order."""
        ...

    def record(self, call: ToolCall, tool: Tool | None, result_ok: bool) -> None:
        """Count a call that ran (rate limits; budgets when it succeeded)."""
        ...

    def snapshot(self) -> dict[str, Any]:
        """The guard's state (counters and approvals) as JSON-ready data."""
        ...

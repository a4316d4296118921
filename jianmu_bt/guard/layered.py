"""LayeredGuard: an inner guard (an agent's own) under an outer one (the tree's) — a floor.

The outer guard is the floor: an inner guard can only add restrictions, never lift the outer's.

```python
guard = LayeredGuard(tree_guard, agent_guard)      # or LayeredGuard(lambda: lookup(), agent_guard)
verdicts = guard.preflight(calls, toolset)
guard.record(call, tool, result.ok)
```

- Every policy of both levels is asked, each against its own level's counters; the strictest
  verdict wins (DENY > PENDING > CONFIRM > ALLOW), the outer level's on a tie, so a tool the tree
  denies is refused with the tree's reason whatever the agent's guard allows.
- `record` counts a call in both levels: the budgets and rate limits of both apply, and a batch
  is planned against copies of both levels' counters.
- A call held (or to be confirmed) by either level needs a reviewer. There is one decision per
  call, kept in one store: the outer guard's `approvals` (the inner's when there is no outer).
  `Tree.approve(call_id)` and `Tree.pending_approvals()` find it there, one approval answers
  the call for both levels, and a rejection or a DENY of either level is final.

The outer guard may be given as a function that returns it (or None), asked on every use: the
loader builds an agent's executor before the run's `services["guard"]` is known, and a
`load_tree(guard=...)` replaces the file's guard.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from jianmu_bt.guard.approvals import ApprovalStore
from jianmu_bt.guard.context import GuardContext
from jianmu_bt.guard.decision import Decision, GuardVerdict
from jianmu_bt.guard.enforcer import GuardEnforcer
from jianmu_bt.guard.errors import GuardSnapshotError
from jianmu_bt.guard.names import tool_key
from jianmu_bt.tools.calls import ToolCall
from jianmu_bt.tools.effects import counted_effects

if TYPE_CHECKING:
    from jianmu_bt.guard.policy import Policy
    from jianmu_bt.tools import Tool, ToolSet

OuterGuard = GuardEnforcer | Callable[[], GuardEnforcer | None] | None
"""The outer level: an enforcer, a function returning one (or None), or None."""

Contexts = tuple[GuardContext, GuardContext]
"""Counters to check against: (outer's, inner's)."""


class LayeredGuard:
    """An inner GuardEnforcer under an outer one; the interface of a GuardEnforcer as the tree
    nodes use it (`check`, `preflight`, `record`, `approvals`, `snapshot`, `restore`)."""

    def __init__(self, outer: OuterGuard, inner: GuardEnforcer) -> None:
        self._outer = outer
        self.inner = inner

    @property
    def outer(self) -> GuardEnforcer | None:
        """The outer level now (None when there is none, or when it is the inner one)."""
        outer = self._outer() if callable(self._outer) else self._outer
        me: object = self  # a look-up may find this very guard (the run's guard is this one)
        return None if outer is self.inner or outer is me else outer

    @property
    def layers(self) -> list[GuardEnforcer]:
        """The levels in force, outer first."""
        outer = self.outer
        return [self.inner] if outer is None else [outer, self.inner]

    @property
    def approvals(self) -> ApprovalStore:
        """Where this guard's held calls are recorded and decided: the outer level's store (the
        inner's when there is no outer level)."""
        return self.layers[0].approvals

    @property
    def policies(self) -> list[Policy]:
        """Every policy in force, outer level first."""
        return [policy for layer in self.layers for policy in layer.policies]

    # -- checking ---------------------------------------------------------------------------

    def check(
        self, call: ToolCall, tool: Tool | None = None, ctx: Contexts | None = None
    ) -> GuardVerdict:
        """The combined verdict of both levels for one call (see the module docstring); `ctx`
        is a pair (outer's, inner's) of counters, by default the levels' own."""
        outer = self.outer
        outer_ctx, inner_ctx = ctx if ctx is not None else (None, None)
        if outer is None:
            return self.inner.check(call, tool, inner_ctx)
        verdicts = [
            *outer.policy_verdicts(call, tool, outer_ctx),
            *self.inner.policy_verdicts(call, tool, inner_ctx),
        ]
        return outer.decide(call, tool, verdicts)

    def refusal(self, call: ToolCall, tool: Tool | None = None) -> GuardVerdict | None:
        """The first DENY a policy of either level gives `call` now, or None; records nothing."""
        for layer in self.layers:
            found = layer.refusal(call, tool)
            if found is not None:
                return found
        return None

    def preflight(
        self,
        calls: Iterable[ToolCall | Mapping[str, Any]],
        toolset: ToolSet,
        ctx: Contexts | None = None,
    ) -> list[GuardVerdict]:
        """One verdict per call of a batch, as `GuardEnforcer.preflight`: each call is checked
        as if the batch's earlier allowed calls had run, against copies of both levels'
        counters; the counters themselves change only through `record`."""
        outer = self.outer
        if outer is None:
            return self.inner.preflight(calls, toolset, ctx[1] if ctx is not None else None)
        given = ctx if ctx is not None else (outer.context, self.inner.context)
        plans: Contexts = (given[0].copy(), given[1].copy())
        verdicts = []
        for call in ToolCall.from_list(calls):
            tool = GuardEnforcer.resolve_tool(call, toolset)
            if tool is None:
                reason = "not a tool of this run; the executor reports unknown tools"
                verdicts.append(GuardVerdict(Decision.ALLOW, reason, "", call.id, call.name))
                continue
            verdict = self.check(call, tool, plans)
            if verdict.allowed:
                for plan in plans:
                    plan.add_effects(counted_effects(tool))
                    plan.add_call_time(tool_key(call, tool))
            verdicts.append(verdict)
        return verdicts

    is_held = staticmethod(GuardEnforcer.is_held)
    resolve_tool = staticmethod(GuardEnforcer.resolve_tool)

    # -- counting ---------------------------------------------------------------------------

    def record(
        self, call: ToolCall, tool: Tool | None, result_ok: bool, ctx: Contexts | None = None
    ) -> None:
        """Count a call that ran in every level (budgets and rate limits of all levels)."""
        outer = self.outer
        outer_ctx, inner_ctx = ctx if ctx is not None else (None, None)
        if outer is not None:
            outer.record(call, tool, result_ok, outer_ctx)
        self.inner.record(call, tool, result_ok, inner_ctx)

    # -- snapshot ---------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """Both levels' state, `{"version": 1, "layers": [outer, inner]}` (each a
        `GuardEnforcer.snapshot()`); just the inner's snapshot when there is no outer level."""
        layers = self.layers
        if len(layers) == 1:
            return self.inner.snapshot()
        return {"version": 1, "layers": [layer.snapshot() for layer in layers]}

    def restore(self, data: Mapping[str, Any]) -> None:
        """Load a `snapshot()` in place; a snapshot that does not fit raises GuardSnapshotError
        and changes nothing."""
        if "layers" not in data:
            self.inner.restore(data)
            return
        layers, saved = self.layers, data["layers"]
        if not isinstance(saved, list) or len(saved) != len(layers):
            raise GuardSnapshotError(
                f"guard snapshot: layers: expected a list of {len(layers)} guard snapshot(s)"
            )
        before = [layer.snapshot() for layer in layers]
        try:
            for layer, snapshot in zip(layers, saved, strict=True):
                layer.restore(snapshot)
        except GuardSnapshotError:
            for layer, snapshot in zip(layers, before, strict=True):
                layer.restore(snapshot)
            raise

    def __repr__(self) -> str:
        return f"LayeredGuard(outer={self.outer!r}, inner={self.inner!r})"

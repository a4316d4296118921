"""GuardEnforcer: runs the policies on each call, combines their verdicts, applies approvals.

```python
enforcer = GuardEnforcer([DenyList(["bash"]), EffectBudget({"http": 10})])
verdicts = enforcer.preflight(calls, toolset)        # one verdict per call, in order
...                                                  # run the allowed calls
enforcer.record(call, tool, result.ok)               # after each call ran
```
Combining: every policy is asked; the most restrictive verdict wins (DENY > PENDING > CONFIRM >
ALLOW), the first policy in order winning a tie. Then the reviewers' word applies: a rejected
call is DENY with the reviewer's reason; an approved held call, or a call covered by a grant,
turns PENDING/CONFIRM into ALLOW. Approvals never lift a DENY (a spent budget stays spent).

Approvals are bound to the call: a decision applies only to a call with the recorded id *and*
the recorded tool and arguments (`arguments_digest`). A call that repeats the id of a recorded
request with another tool or other arguments is DENY, and the store is left as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from jianmu_bt.guard.approval_records import ApprovalStatus, reused_id_reason
from jianmu_bt.guard.approvals import ApprovalStore
from jianmu_bt.guard.context import GuardContext
from jianmu_bt.guard.decision import Decision, GuardVerdict
from jianmu_bt.guard.names import call_names, canonical_tool_name, tool_key
from jianmu_bt.tools.calls import ToolCall
from jianmu_bt.tools.effects import counted_effects

if TYPE_CHECKING:
    from jianmu_bt.guard.config import GuardConfig
    from jianmu_bt.guard.policy import Policy
    from jianmu_bt.tools import Tool, ToolSet

logger = logging.getLogger(__name__)

#: The `policy` of verdicts that come from reviewers rather than from a policy.
APPROVAL_POLICY = "approval"
GRANT_POLICY = "grant"


class GuardEnforcer:
    """Checks tool calls against policies and keeps the run's guard state (context, approvals).

    `policies` are asked in order; `approvals` (a new ApprovalStore by default) holds reviewers'
    decisions; `context` (a new GuardContext by default) holds the run's counters. Methods take
    an optional `ctx` to check against another context; by default they use `self.context`.
    """

    def __init__(
        self,
        policies: Iterable[Policy] = (),
        approvals: ApprovalStore | None = None,
        context: GuardContext | None = None,
    ) -> None:
        self.policies: list[Policy] = list(policies)
        for index, policy in enumerate(self.policies):
            if not callable(getattr(policy, "check", None)) or not isinstance(
                getattr(policy, "name", None), str
            ):
                raise TypeError(
                    f"policies[{index}] is not a policy (it needs a `name` and a "
                    f"`check(call, tool, ctx)` method): {policy!r}"
                )
        self.approvals = approvals if approvals is not None else ApprovalStore()
        self.context = context if context is not None else GuardContext()

    @classmethod
    def from_config(
        cls,
        config: GuardConfig | Mapping[str, Any] | None,
        approvals: ApprovalStore | None = None,
        context: GuardContext | None = None,
    ) -> GuardEnforcer:
        """An enforcer from the YAML shape `{allow, deny, confirm, approve, budgets,
        rate_limits}`; GuardConfigError names any unknown key or bad value."""
        from jianmu_bt.guard.config import GuardConfig  # its pydantic model, built on first use

        return cls(GuardConfig.coerce(config).build_policies(), approvals, context)

    # -- checking ---------------------------------------------------------------------------

    def check(
        self, call: ToolCall, tool: Tool | None = None, ctx: GuardContext | None = None
    ) -> GuardVerdict:
        """The combined verdict for one call (see the module docstring).

        A PENDING or CONFIRM call is recorded in `approvals` so a reviewer can see it. A call
        that ends up PENDING must have an id (approvals are keyed by it): ValueError otherwise.
        A call whose id is recorded for another tool or other arguments is DENY (the store is
        not changed): approvals are bound to the call, not only to its id.
        """
        return self.decide(call, tool, self.policy_verdicts(call, tool, ctx))

    def policy_verdicts(
        self, call: ToolCall, tool: Tool | None = None, ctx: GuardContext | None = None
    ) -> list[GuardVerdict]:
        """What each policy says about `call` against `ctx` (default `self.context`), in policy
        order, before reviewers' decisions apply; policies with no opinion are left out and a
        policy that fails counts as DENY. Changes nothing."""
        ctx = self.context if ctx is None else ctx
        return [v for p in self.policies if (v := self._ask(p, call, tool, ctx)) is not None]

    def refusal(self, call: ToolCall, tool: Tool | None = None) -> GuardVerdict | None:
        """The first DENY a policy gives `call` against the counters as they are now, or None
        (a reviewer's edit is checked with it before it is approved). Records nothing."""
        return next(
            (v for v in self.policy_verdicts(call, tool) if v.decision is Decision.DENY), None
        )

    def preflight(
        self,
        calls: Iterable[ToolCall | Mapping[str, Any]],
        toolset: ToolSet,
        ctx: GuardContext | None = None,
    ) -> list[GuardVerdict]:
        """One verdict per call of a batch, in order.

        Each call is checked against the counters as they would be after the batch's earlier
        allowed calls ran (budgets and rate limits count them). A call whose tool is not in
        `toolset` is ALLOW: reporting unknown tools is the executor's job. The counters
        themselves change only through `record`.
        """
        plan = (self.context if ctx is None else ctx).copy()
        verdicts = []
        for call in ToolCall.from_list(calls):
            tool = self.resolve_tool(call, toolset)
            if tool is None:
                verdicts.append(
                    GuardVerdict(
                        Decision.ALLOW,
                        "not a tool of this run; the executor reports unknown tools",
                        "",
                        call.id,
                        call.name,
                    )
                )
                continue
            verdict = self.check(call, tool, plan)
            if verdict.allowed:
                plan.add_effects(counted_effects(tool))
                plan.add_call_time(tool_key(call, tool))
            verdicts.append(verdict)
        return verdicts

    @staticmethod
    def is_held(verdicts: Iterable[GuardVerdict]) -> bool:
        """True when any verdict of a batch is PENDING: the executor then runs none of the batch
        (RUNNING) and preflights it again when the approvals change (`ApprovalStore.on_change`).
        """
        return any(v.decision is Decision.PENDING for v in verdicts)

    @staticmethod
    def resolve_tool(call: ToolCall, toolset: ToolSet) -> Tool | None:
        """The tool a call would run: by name (case-insensitive), then through aliases."""
        return toolset.get(call.name) or toolset.get(canonical_tool_name(call.name))

    # -- counting ---------------------------------------------------------------------------

    def record(
        self,
        call: ToolCall,
        tool: Tool | None,
        result_ok: bool,
        ctx: GuardContext | None = None,
    ) -> None:
        """Update the counters after `call` ran: its run time always (rate limits), its tool's
        effects only when it succeeded (budgets: its effect tags, `unknown` for a tool that
        declares none and is not read-only; `counted_effects`). Call it once per run of a tool."""
        ctx = self.context if ctx is None else ctx
        ctx.add_call_time(tool_key(call, tool))
        if result_ok and tool is not None:
            ctx.add_effects(counted_effects(tool))

    # -- snapshot ---------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """The run's guard state (counters and approvals) as JSON-ready data.

        Policies are configuration, not state: a resumed run builds the same enforcer (for
        example `from_config`) and then calls `restore`.
        """
        return {
            "version": 1,
            "context": self.context.to_dict(),
            "approvals": self.approvals.to_dict(),
        }

    def restore(self, data: Mapping[str, Any]) -> None:
        """Load a `snapshot()` into this enforcer in place (subscribers, clock and state view are
        kept). A bad snapshot raises GuardSnapshotError and changes nothing."""
        from jianmu_bt.guard.snapshots import EnforcerSnapshot, load_snapshot

        snap = load_snapshot(EnforcerSnapshot, "guard", data)
        GuardContext.from_dict(snap.context)  # validate before anything changes
        self.approvals.restore(snap.approvals)
        self.context.restore(snap.context)

    # -- internals --------------------------------------------------------------------------

    def _ask(
        self, policy: Policy, call: ToolCall, tool: Tool | None, ctx: GuardContext
    ) -> GuardVerdict | None:
        try:
            verdict = policy.check(call, tool, ctx)
        except Exception as exc:  # fail closed: a broken policy must not let calls through
            logger.exception("guard policy %s failed on %s", policy.name, call.name)
            return GuardVerdict(
                Decision.DENY,
                f"the guard could not check this call ({type(exc).__name__}: {exc})",
                policy.name,
                call.id,
                call.name,
            )
        if verdict is not None and not isinstance(verdict, GuardVerdict):
            return GuardVerdict(
                Decision.DENY,
                f"the guard could not check this call (policy returned {verdict!r})",
                policy.name,
                call.id,
                call.name,
            )
        return verdict

    def decide(
        self, call: ToolCall, tool: Tool | None, verdicts: Iterable[GuardVerdict]
    ) -> GuardVerdict:
        """The verdict for `call` from policy `verdicts` (this enforcer's, or those of several
        guards, as `LayeredGuard` does) and the reviewers' word in this enforcer's `approvals`:
        the strictest verdict wins (the first on a tie), a rejection is DENY, an approval or a
        grant bound to this exact call lifts PENDING/CONFIRM, and a held call is recorded."""
        verdicts = list(verdicts)
        record = self.approvals.get(call.id) if call.id else None
        reused = record is not None and not record.binds(call.name, call.arguments)
        if reused:
            record = None  # another call made under a taken id inherits no decision
        if record is not None and record.status is ApprovalStatus.RESPONDED:
            return GuardVerdict(
                Decision.DENY,
                "a reviewer answered in its place",
                APPROVAL_POLICY,
                call.id,
                call.name,
                answer=record.note,
            )
        if record is not None and record.status is ApprovalStatus.REJECTED:
            return GuardVerdict(
                Decision.DENY,
                f"a reviewer rejected it: {record.note}",
                APPROVAL_POLICY,
                call.id,
                call.name,
                hint="Do not repeat this call; take the reviewer's reason into account.",
            )
        strongest = None
        for verdict in verdicts:
            if strongest is None or verdict.decision.rank > strongest.decision.rank:
                strongest = verdict
        if strongest is None:
            return GuardVerdict(Decision.ALLOW, "no policy objected", "", call.id, call.name)
        if strongest.decision in (Decision.ALLOW, Decision.DENY):
            return strongest
        if reused:
            # It would need a reviewer, but its id is taken by another call: it can neither use
            # that call's approval nor be asked about under the same id.
            return GuardVerdict(
                Decision.DENY,
                reused_id_reason(call.id),
                APPROVAL_POLICY,
                call.id,
                call.name,
                hint="Make this call again under a new call id; an approval given for the "
                "earlier call does not carry over.",
            )
        # CONFIRM or PENDING: a reviewer's approval or a grant lets the call run.
        if self.approvals.is_approved(call.id, call.name, call.arguments):
            note = f": {record.note}" if record and record.note else ""
            edited = " with edited arguments" if record is not None and record.edited else ""
            return GuardVerdict(
                Decision.ALLOW,
                f"approved by a reviewer{edited}{note}",
                APPROVAL_POLICY,
                call.id,
                call.name,
            )
        if record is not None and record.edited and record.status is ApprovalStatus.APPROVED:
            # The reviewer approved other arguments: the call as proposed does not run.
            return GuardVerdict(
                Decision.DENY,
                "a reviewer approved this call only with other arguments",
                APPROVAL_POLICY,
                call.id,
                call.name,
            )
        grant = self.approvals.use_grant(call, call_names(call, tool))
        if grant is not None:
            return GuardVerdict(
                Decision.ALLOW, f"allowed by grant {grant.id}", GRANT_POLICY, call.id, call.name
            )
        if strongest.decision is Decision.PENDING and not call.id:
            raise ValueError(
                f"the call to '{call.name}' needs approval but has no id; approvals are keyed "
                "by tool_call_id (give calls ids with ToolCall.with_id())"
            )
        if call.id:
            self.approvals.request(call, strongest)
        return strongest

    def __repr__(self) -> str:
        names = ", ".join(p.name for p in self.policies)
        return f"GuardEnforcer([{names}], {self.context!r}, {self.approvals!r})"

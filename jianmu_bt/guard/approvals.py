"""ApprovalStore: reviewers' decisions about held and refused calls, keyed by tool_call_id.

Two kinds of request land here, both recorded by the GuardEnforcer:

- a PENDING call (`ApprovalRequired`) holds its batch; `approve(call_id)` lets that call run,
  `reject(call_id, reason)` turns it into DENY with the reviewer's reason;
- a CONFIRM call (`ConfirmList`) was refused and the LLM asked the user; `approve(call_id)` then
  grants one identical call (same tool, same arguments), which the LLM makes again.

Approvals are bound to the call, not just its id: every record keeps the `digest` of its tool
and arguments (`arguments_digest`), and a decision only applies to a call with the same id *and*
the same digest (`is_approved`). A call repeating an id with another tool or other arguments
inherits nothing (the enforcer refuses it, see CallIdReusedError); likewise a grant remembers
which (call id, digest) used it, so repeating an id does not reuse a one-use grant.

`grant(tool, arguments=None, uses=1)` pre-approves calls directly ("allow http_request for the
rest of the run": `uses=None`). Every change is announced to `on_change` subscribers, so a tree
runner waiting on a held batch can wake. The store is thread-safe: approvals may come from a web
handler or a UI thread while the tree runs elsewhere; callbacks run on the approving thread.
The records it keeps are in `approval_records`; the shape of its snapshot, in `snapshots`.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from jianmu_bt.guard.approval_records import (
    ApprovalChange,
    ApprovalRecord,
    ApprovalStatus,
    CallIdReusedError,
    ChangeCallback,
    Grant,
    UnknownApprovalError,
    journal_approval,
)
from jianmu_bt.guard.binding import arguments_digest
from jianmu_bt.guard.decision import Decision, GuardVerdict
from jianmu_bt.guard.names import canonical_tool_name

if TYPE_CHECKING:
    from jianmu_bt.tools import ToolCall

logger = logging.getLogger(__name__)


class ApprovalStore:
    """Approvals and grants of one run; see the module docstring for the flow."""

    def __init__(self) -> None:
        self._records: dict[str, ApprovalRecord] = {}
        self._grants: dict[str, Grant] = {}
        self._listeners: list[ChangeCallback] = []
        self._lock = threading.RLock()
        #: Increases on every change; a runner can compare it to see whether anything arrived.
        self.version = 0

    # -- requests (written by the enforcer) -------------------------------------------------

    def request(self, call: ToolCall, verdict: GuardVerdict) -> ApprovalRecord:
        """Record that `call` waits for a reviewer (PENDING or CONFIRM).

        Idempotent per call: the same id with the same tool and arguments returns the existing
        record. The same id for a different call raises CallIdReusedError (a ValueError) and
        changes nothing: the new call must not inherit the earlier call's decision.
        """
        if not call.id:
            raise ValueError(
                f"the call to '{call.name}' has no id; approvals are keyed by tool_call_id "
                "(give calls ids with ToolCall.with_id())"
            )
        digest = arguments_digest(call.name, call.arguments)
        with self._lock:
            existing = self._records.get(call.id)
            if existing is not None:
                if existing.digest != digest:
                    raise CallIdReusedError(call.id, existing)
                return existing
            record = ApprovalRecord(
                call_id=call.id,
                tool=call.name,
                arguments=call.arguments,
                kind=verdict.decision,
                reason=verdict.reason,
                policy=verdict.policy,
                digest=digest,
            )
            self._records[call.id] = record
        self._notify(ApprovalChange("requested", call.id, record=record))
        return record

    # -- reviewer's decisions ---------------------------------------------------------------

    def approve(
        self,
        call_id: str,
        note: str | None = None,
        *,
        arguments: Mapping[str, Any] | None = None,
        by: str | None = None,
    ) -> ApprovalRecord:
        """Approve the exact call recorded under `call_id` (its tool and arguments, the record's
        digest). A held (PENDING) call then runs; a refused (CONFIRM) call grants the identical
        call once. A later call repeating the id with another tool or arguments is not approved.

        With `arguments` the reviewer approves the call with those arguments instead: only that
        edited call is approved (it still passes every policy first: `GuardEnforcer.decide`).
        `by` names who decided. Raises UnknownApprovalError (a KeyError) for an unknown id,
        ValueError if rejected, or approved before with other arguments.
        """
        grant = None
        edit = None if arguments is None else dict(arguments)
        with self._lock:
            record = self._get_open(call_id)
            if edit is not None and arguments_digest(record.tool, edit) == record.digest:
                edit = None  # "edited" to what it proposed: a plain approval
            if record.status is ApprovalStatus.APPROVED and edit != record.approved_arguments:
                raise ValueError(f"call {call_id} was already approved with other arguments")
            record, changed = self._decide(
                call_id,
                ApprovalStatus.APPROVED,
                note,
                approved_arguments=edit,
                approved_digest="",
                decided_by=by,
            )
            if not changed:
                return record
            if record.kind is Decision.CONFIRM:
                allowed = record.arguments if edit is None else edit
                grant = self._add_grant(canonical_tool_name(record.tool), allowed, 1, note)
        self._notify(ApprovalChange("approved", call_id, record=record, grant=grant))
        return record

    def adopt(
        self,
        call: ToolCall,
        *,
        note: str | None = None,
        arguments: Mapping[str, Any] | None = None,
        by: str | None = None,
    ) -> ApprovalRecord:
        """Record that `call` was approved elsewhere (in a durable run's journal), with the
        arguments the reviewer approved instead if any. It replaces whatever this store held
        for the call (a restored snapshot may be older than the journal): the journal's word
        wins."""
        if not call.id:
            raise ValueError(f"the call to '{call.name}' has no id; approvals are keyed by it")
        with self._lock:
            held = self._records.get(call.id)
            record = journal_approval(held, call.id, call.name, call.arguments, note, arguments, by)
            self._records[call.id] = record
        self._notify(ApprovalChange("approved", record.call_id, record=record))
        return record

    def as_approved(self, call: ToolCall) -> ToolCall:
        """`call` as a reviewer approved it: with the edited arguments when they edited this
        very call, else `call` itself."""
        record = self._records.get(call.id) if call.id else None
        if record is None or not record.edited or not record.binds(call.name, call.arguments):
            return call
        return replace(call, arguments=record.approved_arguments)

    def reject(self, call_id: str, reason: str, *, by: str | None = None) -> ApprovalRecord:
        """Reject a waiting call: it becomes DENY and the LLM reads `reason`; `by` names who
        decided.

        Raises UnknownApprovalError (a KeyError) for an unknown id, ValueError for an empty
        reason or an already approved call.
        """
        return self._refuse(call_id, ApprovalStatus.REJECTED, "reject", reason, by)

    def respond(self, call_id: str, answer: str, *, by: str | None = None) -> ApprovalRecord:
        """Answer a waiting call in its place: it does not run, and the LLM reads `answer` as
        its result ("respond instead"); `by` names who decided.

        Raises UnknownApprovalError (a KeyError) for an unknown id, ValueError for an empty
        answer or a call already decided otherwise.
        """
        return self._refuse(call_id, ApprovalStatus.RESPONDED, "respond", answer, by)

    def grant(
        self,
        tool: str,
        arguments: Any = None,
        uses: int | None = 1,
        note: str | None = None,
    ) -> Grant:
        """Pre-approve calls to `tool` (exactly `arguments`, or any when None) for `uses` calls
        (None: unlimited). Granted calls pass CONFIRM and PENDING policies, never DENY ones."""
        if not isinstance(tool, str) or not tool.strip():
            raise ValueError(f"grant needs a tool name, got {tool!r}")
        if uses is not None and (isinstance(uses, bool) or not isinstance(uses, int) or uses < 1):
            raise ValueError(f"grant uses must be a whole number >= 1 or None, got {uses!r}")
        with self._lock:
            grant = self._add_grant(canonical_tool_name(tool), arguments, uses, note)
        self._notify(ApprovalChange("granted", grant=grant))
        return grant

    def revoke(self, grant_id: str) -> Grant:
        """Withdraw a grant; UnknownApprovalError (a KeyError) for an unknown id."""
        with self._lock:
            if grant_id not in self._grants:
                raise UnknownApprovalError(f"no grant with id {grant_id!r}")
            grant = self._grants.pop(grant_id)
        self._notify(ApprovalChange("revoked", grant=grant))
        return grant

    # -- reading ----------------------------------------------------------------------------

    def status(self, call_id: str | None) -> ApprovalStatus | None:
        """The status of a call's request, or None when the guard never asked about it."""
        record = self._records.get(call_id) if call_id else None
        return record.status if record else None

    def get(self, call_id: str) -> ApprovalRecord | None:
        """The request for `call_id`, or None."""
        return self._records.get(call_id)

    def is_approved(self, call_id: str | None, tool: str, arguments: Any) -> bool:
        """True only when a reviewer approved the held (PENDING-kind) call `call_id` and this is
        that very call: same tool and arguments (the record's digest), or the arguments the
        reviewer approved instead."""
        record = self._records.get(call_id) if call_id else None
        return (
            record is not None
            and record.status is ApprovalStatus.APPROVED
            and record.kind is Decision.PENDING
            and record.approves(tool, arguments)
        )

    def pending(self, kind: Decision | None = None) -> list[ApprovalRecord]:
        """Requests still waiting for a reviewer, oldest first; `kind` filters PENDING/CONFIRM."""
        with self._lock:
            return [
                r
                for r in self._records.values()
                if r.status is ApprovalStatus.PENDING and (kind is None or r.kind is kind)
            ]

    def records(self) -> list[ApprovalRecord]:
        """Every request, decided or not, oldest first."""
        with self._lock:
            return list(self._records.values())

    def grants(self) -> list[Grant]:
        """Every grant, including used-up ones (they remember which calls used them)."""
        with self._lock:
            return list(self._grants.values())

    # -- used by the enforcer ---------------------------------------------------------------

    def use_grant(self, call: ToolCall, names: Collection[str]) -> Grant | None:
        """The grant that lets `call` through, using one of its uses; None when none applies.

        A call that already used a grant (same id, same tool and arguments) gets the same grant
        again without another use. A call repeating an id with another tool or other arguments
        is a new call: it needs a grant with a use left.
        """
        digest = arguments_digest(call.name, call.arguments)
        with self._lock:
            if call.id:
                for grant in self._grants.values():
                    if grant.used_by_call(call.id, digest):
                        return grant
            for grant in self._grants.values():
                if grant.matches(names, call.arguments):
                    if grant.uses is None:
                        return grant
                    used = (*grant.used_by, (call.id, digest)) if call.id else grant.used_by
                    updated = replace(grant, uses=grant.uses - 1, used_by=used)
                    self._grants[grant.id] = updated
                    self.version += 1
                    return updated
        return None

    # -- subscriptions ----------------------------------------------------------------------

    def on_change(self, callback: ChangeCallback) -> Callable[[], None]:
        """Call `callback(change)` after every change; returns a function that unsubscribes.

        Callbacks run on the thread that made the change and must be quick; to wake an event
        loop from another thread use `loop.call_soon_threadsafe` or `anyio.from_thread`. An
        exception in a callback is logged and does not undo the change.
        """
        with self._lock:
            self._listeners.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._listeners:
                    self._listeners.remove(callback)

        return unsubscribe

    # -- snapshot ---------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Requests and grants as JSON-ready data (subscribers are not part of it)."""
        from jianmu_bt.guard.snapshots import ApprovalsSnapshot  # pydantic, on first use

        with self._lock:
            snap = ApprovalsSnapshot(records=list(self._records.values()), grants=self.grants())
        return snap.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ApprovalStore:
        """A store holding the requests and grants of `to_dict()` output."""
        store = cls()
        store.restore(data)
        return store

    def restore(self, data: Mapping[str, Any]) -> None:
        """Replace requests and grants with a snapshot's, keeping subscribers; GuardSnapshotError
        names a bad entry and leaves the store as it was."""
        from jianmu_bt.guard.snapshots import ApprovalsSnapshot, load_snapshot

        snap = load_snapshot(ApprovalsSnapshot, "approval store", data)
        with self._lock:
            self._records = {r.call_id: r for r in snap.records}
            self._grants = {g.id: g for g in snap.grants}
        self._notify(ApprovalChange("restored"))

    # -- internals --------------------------------------------------------------------------

    def _get_open(self, call_id: str) -> ApprovalRecord:
        record = self._records.get(call_id)
        if record is None:
            waiting = ", ".join(r.call_id for r in self.pending()) or "none"
            raise UnknownApprovalError(
                f"no call {call_id!r} is waiting for approval; waiting: {waiting}"
            )
        return record

    def _decide(
        self, call_id: str, status: ApprovalStatus, note: str | None, **decision: Any
    ) -> tuple[ApprovalRecord, bool]:
        """Move a waiting request to `status` (lock held), with the `decision`'s other fields
        (edited arguments, who decided) in the same single replacement, so no reader ever sees
        a half-made decision: `(record, changed)`.

        Deciding the same way twice changes nothing; the opposite decision is a ValueError.
        """
        record = self._get_open(call_id)
        if record.status is status:
            return record, False
        if record.status is not ApprovalStatus.PENDING:
            why = f": {record.note}" if record.status is ApprovalStatus.REJECTED else ""
            raise ValueError(f"call {call_id} was already {record.status.value}{why}")
        record = replace(record, status=status, note=note, **decision)
        self._records[call_id] = record
        return record, True

    def _refuse(
        self, call_id: str, status: ApprovalStatus, verb: str, text: Any, by: str | None
    ) -> ApprovalRecord:
        """Close a waiting call without running it (rejected, or answered in its place) with
        `text` the LLM reads; ValueError for an empty one."""
        if not isinstance(text, str) or not text.strip():
            what = "a reason" if status is ApprovalStatus.REJECTED else "an answer"
            raise ValueError(f"{verb} needs {what} the LLM can read, got an empty one")
        with self._lock:
            record, changed = self._decide(call_id, status, text.strip(), decided_by=by)
        if changed:
            rejected = status is ApprovalStatus.REJECTED
            change = ApprovalChange("rejected" if rejected else "responded", call_id, record=record)
            self._notify(change)
        return record

    def _add_grant(self, tool: str, arguments: Any, uses: int | None, note: str | None) -> Grant:
        grant = Grant(
            id=f"grant_{uuid.uuid4().hex[:12]}",
            tool=tool,
            arguments=arguments,
            uses=uses,
            note=note,
        )
        self._grants[grant.id] = grant
        return grant

    def _notify(self, change: ApprovalChange) -> None:
        with self._lock:
            self.version += 1
            listeners = list(self._listeners)
        for callback in listeners:
            try:
                callback(change)
            except Exception:  # a broken subscriber must not undo a reviewer's decision
                logger.exception("approval change callback %r failed", callback)

    def __repr__(self) -> str:
        return f"ApprovalStore(pending={len(self.pending())}, grants={len(self._grants)})"

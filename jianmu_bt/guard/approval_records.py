"""The records of the approval store: requests, their status, grants and change notices.

An `ApprovalRecord` is one call a reviewer is asked about; a `Grant` is a standing approval; an
`ApprovalChange` tells `ApprovalStore.on_change` subscribers what changed. All are frozen: the
store replaces a record or a grant to change it. Both are bound to their call by `digest`
(`arguments_digest` of tool and arguments), so a decision never carries over to another call that
repeats an id. The errors the store raises are here too.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Literal

from jianmu_bt.guard.binding import arguments_digest
from jianmu_bt.guard.decision import Decision


class UnknownApprovalError(KeyError):
    """A call id the store has no request for; the message lists the calls still waiting."""

    def __str__(self) -> str:
        return str(self.args[0])


class CallIdReusedError(ValueError):
    """A call id the store already holds a request for, reused by a different call (another
    tool or other arguments): the new call may not inherit the earlier call's decision."""

    def __init__(self, call_id: str, record: ApprovalRecord) -> None:
        super().__init__(reused_id_reason(call_id))
        self.call_id = call_id
        self.record = record


def reused_id_reason(call_id: str | None) -> str:
    """Why a call repeating another call's id is refused, in words an LLM can act on."""
    return (
        f"call id {call_id} was already used for a different call (other tool or arguments); "
        "a call needs an id of its own"
    )


class ApprovalStatus(StrEnum):
    """Where a request stands: waiting for a reviewer, approved or rejected."""

    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    RESPONDED = "responded"  # not run: the reviewer's reply is the call's result


@dataclass(frozen=True, slots=True)
class ApprovalRecord:
    """One call a reviewer is asked about: which call, why the guard asked, and the answer.

    `kind` is PENDING (the batch is held) or CONFIRM (the call was refused until the user agrees).
    `note` is the reviewer's note on approval, their reason on rejection, or their reply when
    they answered in the call's place (RESPONDED). `digest` binds the
    record to its call (`arguments_digest(tool, arguments)`, computed when left empty): the
    decision applies only to a call with this id and this digest. A reviewer who approved the
    call with other arguments left them in `approved_arguments` (bound by `approved_digest`):
    the approval then applies to the edited call only. `decided_by` names who decided.
    """

    call_id: str
    tool: str
    arguments: Any
    status: ApprovalStatus = ApprovalStatus.PENDING
    kind: Decision = Decision.PENDING
    reason: str = ""
    policy: str = ""
    note: str | None = None
    digest: str = ""
    approved_arguments: Any = None
    approved_digest: str = ""
    decided_by: str | None = None

    def __post_init__(self) -> None:
        if not self.digest:
            object.__setattr__(self, "digest", arguments_digest(self.tool, self.arguments))
        if self.approved_arguments is not None and not self.approved_digest:
            digest = arguments_digest(self.tool, self.approved_arguments)
            object.__setattr__(self, "approved_digest", digest)

    @property
    def edited(self) -> bool:
        """True when a reviewer approved the call with other arguments than it proposed."""
        return bool(self.approved_digest) and self.approved_digest != self.digest

    def binds(self, tool: str, arguments: Any) -> bool:
        """True when a call to `tool` with `arguments` is the call this record is about: the
        proposed call, or the edited one a reviewer approved instead."""
        digest = arguments_digest(tool, arguments)
        return digest == self.digest or (self.edited and digest == self.approved_digest)

    def approves(self, tool: str, arguments: Any) -> bool:
        """True when this record's approval lets a call to `tool` with `arguments` run: the
        edited call when the reviewer edited it (never the proposed one then), else the call."""
        bound = self.approved_digest if self.edited else self.digest
        return bound == arguments_digest(tool, arguments)


def journal_approval(
    held: ApprovalRecord | None,
    call_id: str,
    tool: str,
    arguments: Any,
    note: str | None,
    approved_arguments: Any,
    by: str | None,
) -> ApprovalRecord:
    """The record of an approval a durable run's journal holds for a call (`held`: what the
    store had for it, if anything): approved, with the reviewer's edit unless it is the call as
    proposed, and the request's kind and reason when `held` is about this very call."""
    record = ApprovalRecord(call_id, tool, arguments, status=ApprovalStatus.APPROVED, note=note)
    same = held is not None and held.digest == record.digest
    edit = None if approved_arguments is None else dict(approved_arguments)
    if edit is not None and arguments_digest(tool, edit) == record.digest:
        edit = None
    return replace(
        record,
        kind=held.kind if same and held is not None else Decision.PENDING,
        reason=held.reason if same and held is not None else "approved in the run's journal",
        policy=held.policy if same and held is not None else "journal",
        approved_arguments=edit,
        decided_by=by,
    )


@dataclass(frozen=True, slots=True)
class Grant:
    """A standing approval: calls to `tool` (with exactly `arguments`, or any when None) pass
    CONFIRM and PENDING policies. `uses` is how many calls are left (None: unlimited); `used_by`
    remembers the calls that used it as `(call id, digest)` pairs, so checking the same call
    twice uses it once, while a call repeating an id with other arguments counts as a new call.
    """

    id: str
    tool: str
    arguments: Any = None
    uses: int | None = 1
    note: str | None = None
    used_by: tuple[tuple[str, str], ...] = ()

    @property
    def digest(self) -> str | None:
        """The digest of the one call this grant allows, or None when it allows any arguments."""
        return None if self.arguments is None else arguments_digest(self.tool, self.arguments)

    def matches(self, names: Collection[str], arguments: Any) -> bool:
        """True when a call with one of `names` and these arguments may use this grant.

        Exact arguments are compared as the digest compares them (canonical JSON).
        """
        if self.tool not in names or (self.uses is not None and self.uses <= 0):
            return False
        return self.arguments is None or self.digest == arguments_digest(self.tool, arguments)

    def used_by_call(self, call_id: str | None, digest: str) -> bool:
        """True when the call `call_id` with this `digest` already used this grant."""
        return bool(call_id) and (call_id, digest) in self.used_by


@dataclass(frozen=True, slots=True)
class ApprovalChange:
    """What changed in the store, as passed to `on_change` callbacks."""

    kind: Literal[
        "requested", "approved", "rejected", "responded", "granted", "revoked", "restored"
    ]
    call_id: str | None = None
    record: ApprovalRecord | None = None
    grant: Grant | None = None


ChangeCallback = Callable[[ApprovalChange], None]
"""What `ApprovalStore.on_change` calls with each change."""

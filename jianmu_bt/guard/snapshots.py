"""The validated shapes of the guard's snapshots: run counters, approvals, a whole enforcer.

`GuardContext`, `ApprovalStore` and `GuardEnforcer` save their state as plain JSON-ready data
and read it back through these pydantic models, which name every bad entry. The models are built
when this module is first imported, which is when a snapshot is first written or restored, so
importing the guard costs no pydantic model build.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, ValidationError, model_validator

from jianmu_bt.guard.approval_records import ApprovalRecord, Grant
from jianmu_bt.guard.binding import arguments_digest
from jianmu_bt.guard.errors import GuardSnapshotError

Snapshot = TypeVar("Snapshot", bound=BaseModel)


def load_snapshot(model: type[Snapshot], what: str, data: Any) -> Snapshot:
    """`data` validated as `model`; GuardSnapshotError names `what` and every bad entry."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise GuardSnapshotError.from_validation_error(what, exc) from None


class ContextSnapshot(BaseModel):
    """A `GuardContext.to_dict()`: effect tag -> successful calls, tool -> run times."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    effect_counts: dict[str, NonNegativeInt] = Field(default_factory=dict)
    call_times: dict[str, list[float]] = Field(default_factory=dict)


class ApprovalsSnapshot(BaseModel):
    """An `ApprovalStore.to_dict()`: every request and every grant, oldest first."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    records: list[ApprovalRecord] = Field(default_factory=list)
    grants: list[Grant] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        """Read snapshots written before calls were bound: records without a digest get one
        (`ApprovalRecord.__post_init__`); a grant's `used_by` of plain call ids is bound to the
        grant's own arguments, or to nothing reusable when it allows any arguments."""
        if isinstance(data, Mapping) and isinstance(data.get("grants"), list):
            data = {**data, "grants": [_upgrade_grant(g) for g in data["grants"]]}
        return data


def _upgrade_grant(data: Any) -> Any:
    used_by = data.get("used_by") if isinstance(data, Mapping) else None
    if not isinstance(used_by, list | tuple) or not any(isinstance(u, str) for u in used_by):
        return data
    tool, arguments = data.get("tool"), data.get("arguments")
    if not isinstance(tool, str):
        return data  # validation names the bad tool
    digest = "" if arguments is None else arguments_digest(tool, arguments)
    bound = [(u, digest) if isinstance(u, str) else u for u in used_by]
    return {**data, "used_by": bound}


class EnforcerSnapshot(BaseModel):
    """A `GuardEnforcer.snapshot()`: its context's and its approval store's snapshots."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    context: dict[str, Any]
    approvals: dict[str, Any]

"""The guard: policies that decide whether a tool call may run, and the enforcer combining them.

Decisions are ALLOW, DENY, CONFIRM (ask the user first) and PENDING (hold until a reviewer
approves); the strictest verdict of all policies wins. A LayeredGuard puts an agent's own guard
under the tree's, which stays a floor. See docs/guard.md.
"""

from jianmu_bt.guard.approvals import (
    ApprovalChange,
    ApprovalRecord,
    ApprovalStatus,
    ApprovalStore,
    CallIdReusedError,
    Grant,
    UnknownApprovalError,
)
from jianmu_bt.guard.binding import arguments_digest
from jianmu_bt.guard.config import GuardConfig
from jianmu_bt.guard.context import HISTORY_LIMIT, GuardContext
from jianmu_bt.guard.decision import Decision, GuardVerdict
from jianmu_bt.guard.enforcer import GuardEnforcer
from jianmu_bt.guard.errors import GuardConfigError, GuardSnapshotError
from jianmu_bt.guard.layered import LayeredGuard
from jianmu_bt.guard.limits import EffectBudget, Rate, RateLimit
from jianmu_bt.guard.lists import AllowList, ApprovalRequired, ConfirmList, DenyList
from jianmu_bt.guard.policy import BasePolicy, Policy, canonical_tool_name
from jianmu_bt.guard.predicates import ArgumentPredicate, host_not_in, path_outside

__all__ = [
    "HISTORY_LIMIT",
    "AllowList",
    "ApprovalChange",
    "ApprovalRecord",
    "ApprovalRequired",
    "ApprovalStatus",
    "ApprovalStore",
    "ArgumentPredicate",
    "BasePolicy",
    "CallIdReusedError",
    "ConfirmList",
    "Decision",
    "DenyList",
    "EffectBudget",
    "Grant",
    "GuardConfig",
    "GuardConfigError",
    "GuardContext",
    "GuardEnforcer",
    "GuardSnapshotError",
    "GuardVerdict",
    "LayeredGuard",
    "Policy",
    "Rate",
    "RateLimit",
    "UnknownApprovalError",
    "arguments_digest",
    "canonical_tool_name",
    "host_not_in",
    "path_outside",
]

"""The guard: policies that decide whether a tool call may run, and the enforcer combining them.

Decisions are ALLOW, DENY, CONFIRM (ask the user first) and PENDING (hold until a reviewer
approves); the strictest verdict of all policies wins. A LayeredGuard puts an agent's own guard
under the tree's, which stays a floor. See docs/guard.md.

Each name is imported from its module on first use (`jianmu_bt._lazy`), so a module that needs
one piece (`from jianmu_bt.guard.decision import Decision`) does not pay for the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jianmu_bt._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see
    from jianmu_bt.guard.approval_records import (
        ApprovalChange as ApprovalChange,
        ApprovalRecord as ApprovalRecord,
        ApprovalStatus as ApprovalStatus,
        CallIdReusedError as CallIdReusedError,
        Grant as Grant,
        UnknownApprovalError as UnknownApprovalError,
    )
    from jianmu_bt.guard.approvals import ApprovalStore as ApprovalStore
    from jianmu_bt.guard.binding import arguments_digest as arguments_digest
    from jianmu_bt.guard.config import GuardConfig as GuardConfig
    from jianmu_bt.guard.context import HISTORY_LIMIT as HISTORY_LIMIT, GuardContext as GuardContext
    from jianmu_bt.guard.decision import Decision as Decision, GuardVerdict as GuardVerdict
    from jianmu_bt.guard.enforcer import GuardEnforcer as GuardEnforcer
    from jianmu_bt.guard.errors import (
        GuardConfigError as GuardConfigError,
        GuardSnapshotError as GuardSnapshotError,
    )
    from jianmu_bt.guard.layered import LayeredGuard as LayeredGuard
    from jianmu_bt.guard.limits import (
        EffectBudget as EffectBudget,
        Rate as Rate,
        RateLimit as RateLimit,
    )
    from jianmu_bt.guard.lists import (
        AllowList as AllowList,
        ApprovalRequired as ApprovalRequired,
        ConfirmList as ConfirmList,
        DenyList as DenyList,
    )
    from jianmu_bt.guard.names import canonical_tool_name as canonical_tool_name
    from jianmu_bt.guard.policy import BasePolicy as BasePolicy, Policy as Policy
    from jianmu_bt.guard.predicates import (
        ArgumentPredicate as ArgumentPredicate,
        host_not_in as host_not_in,
        path_outside as path_outside,
    )


__getattr__, __dir__ = lazy_exports(__name__, globals())

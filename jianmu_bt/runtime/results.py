"""RunResult: how a run of a tree ended."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import py_trees
from py_trees.common import Status


@dataclass
class RunResult:
    """How a run ended: final status, the state as a dict, ticks taken, and why it failed."""

    status: Status
    state: dict[str, Any]
    ticks: int
    reason: str = ""
    run_id: str = ""
    duration: float = 0.0
    node_statuses: dict[str, Status] = field(default_factory=dict)
    #: True when a durable run paused (a call waits for a decision); `status` is then RUNNING.
    paused: bool = False

    @property
    def ok(self) -> bool:
        """True when the root ended in SUCCESS."""
        return self.status == Status.SUCCESS

    @property
    def run_status(self) -> str:
        """The run's status word: `succeeded`, `failed` or `paused`."""
        if self.paused:
            return "paused"
        return "succeeded" if self.status == Status.SUCCESS else "failed"


def failure_reason(
    nodes: Iterable[py_trees.behaviour.Behaviour], statuses: Mapping[str, Status]
) -> str:
    """Why a run failed: the feedback of the last of `nodes` (in tree order) that ended in
    FAILURE with a message, as "name: message"; "" when none has one."""
    for node in reversed(list(nodes)):
        if statuses.get(str(node.id)) == Status.FAILURE and node.feedback_message:
            return f"{node.name}: {node.feedback_message}"
    return ""

"""AsyncNode: a py_trees Behaviour whose work is a coroutine.

Lifecycle (py_trees' own, honoured exactly):

| py_trees call | AsyncNode does |
|---|---|
| `initialise()` | starts `run_async()` in the runner's task group |
| `update()` | RUNNING while the work runs; then its outcome; never blocks |
| `terminate(INVALID)` | cancels the work (a halt or a preemption by a parent) |

The outcome of `run_async()`: a `Status`, or True/False/None for SUCCESS/FAILURE/SUCCESS (after
`work_ended`, which a node may override to make it from another result). An exception (or the
node's `timeout`) becomes FAILURE with the reason in `feedback_message`; nothing escapes `tick()`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import py_trees
from py_trees.common import Status

from jianmu_bt.runtime.context import RunContext, TaskHandle
from jianmu_bt.runtime.lean import LeanLeaf

if TYPE_CHECKING:
    from jianmu_bt.runtime.state import StateManager

logger = logging.getLogger(__name__)


class ContextNode(LeanLeaf, py_trees.behaviour.Behaviour):
    """A behaviour that is bound to a RunContext (state, events, services) before it is ticked."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name)
        self.context: RunContext | None = None
        #: The node's stable key in its tree (set by the runner): a durable run's journal keys
        #: its steps by it.
        self.node_key: str = name

    def bind(self, context: RunContext) -> None:
        """Called by the runner before the first tick."""
        self.context = context

    @property
    def state(self) -> StateManager:
        """The run's StateManager (a clear error when the node is not bound to a run)."""
        if self.context is None:
            raise RuntimeError(
                f"node '{self.name}' is not bound to a run; tick it with a TreeRunner"
            )
        return self.context.state

    @property
    def listened(self) -> bool:
        """True when someone listens to the run's events: build costly event data only then."""
        return self.context is not None and self.context.events.active

    def emit(self, type: str, **data: Any) -> None:
        """Emit an event about this node (free when nobody listens)."""
        if self.context is not None:
            self.context.events.emit(type, node=self.name, **data)


class AsyncNode(ContextNode):
    """A behaviour whose work is `async run_async()`, run by the tree runner's event loop.

    Subclasses implement `run_async`: an `async def`, or a plain function that returns an
    awaitable (no coroutine frame of the node's own while the work waits). `timeout` (seconds)
    bounds the work; None means no limit.
    """

    def __init__(self, name: str, timeout: float | None = None) -> None:
        super().__init__(name=name)
        self.timeout = timeout
        self._handle: TaskHandle | None = None

    def run_async(self) -> Awaitable[Any]:
        """The node's work. Its result: a Status, or True/None for SUCCESS and False for FAILURE
        (or what `work_ended` makes one of these from)."""
        raise NotImplementedError  # abstract: every concrete node implements its own work

    def work_ended(self, result: Any) -> Any:
        """The outcome of the work from its result, in the work's task as it ends (an exception
        here fails the node as one from the work would). The result as it is, unless a node
        overrides this."""
        return result

    def initialise(self) -> None:
        """Start the work (a new attempt each time the node is entered)."""
        self._cancel()
        self.feedback_message = ""
        if self.context is None:
            self._handle = None
            return
        self._handle = self.context.spawn(self, timeout=self.timeout)

    def update(self) -> Status:
        """RUNNING until the work ends, then its outcome; never blocks and never raises."""
        handle = self._handle
        if handle is None:
            self.feedback_message = f"node '{self.name}' is not bound to a run (use a TreeRunner)"
            return Status.FAILURE
        if not handle.done:
            return Status.RUNNING
        if handle.error is not None:
            self.feedback_message = _describe(handle.error)
            logger.debug("node %s failed: %s", self.name, self.feedback_message)
            return Status.FAILURE
        if handle.cancelled:
            self.feedback_message = "cancelled"
            return Status.FAILURE
        return _to_status(handle.result, self)

    @property
    def working(self) -> bool:
        """True while the work this node started is still in flight."""
        handle = self._handle
        return handle is not None and not handle.done

    def terminate(self, new_status: Status) -> None:
        """Cancel the work when the node is interrupted (INVALID)."""
        if new_status == Status.INVALID:
            self._cancel()

    def _cancel(self) -> None:
        if self._handle is not None and not self._handle.done:
            self._handle.cancel()


def _to_status(result: Any, node: AsyncNode) -> Status:
    if isinstance(result, Status):
        if result in (Status.INVALID, Status.RUNNING):
            # The work has ended, so it cannot still be running; a node that waits awaits.
            node.feedback_message = f"run_async returned {result.value}, which is not an outcome"
            return Status.FAILURE
        return result
    if result is None or result is True:
        return Status.SUCCESS
    if result is False:
        return Status.FAILURE
    node.feedback_message = f"run_async returned {result!r}, not a Status or bool"
    return Status.FAILURE


def _describe(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__

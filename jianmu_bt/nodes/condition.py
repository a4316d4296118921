"""Condition: a node that succeeds when a safe expression over the run's state is true.

The expression language (`SafeExpression`, in `jianmu_bt.runtime.expressions`) is a small,
allow-listed part of Python's expression syntax, checked when the node is built and evaluated
without `eval`: names are state fields; see that module for what is allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from py_trees.common import Status

from jianmu_bt.runtime.async_node import ContextNode
from jianmu_bt.runtime.expressions import FUNCTIONS, ExpressionError, SafeExpression

__all__ = ["FUNCTIONS", "Condition", "ExpressionError", "SafeExpression"]


_NO_RENAME: Mapping[str, str] = MappingProxyType({})


class Condition(ContextNode):
    """SUCCESS when `check` (a safe expression over state fields) is true, FAILURE when false.

    A failing evaluation (a missing field, `None > 3`) is FAILURE with the reason in
    `feedback_message`. `rename` maps names in the expression to state fields (subtree remaps).
    """

    def __init__(
        self,
        name: str,
        check: str | SafeExpression,
        *,
        rename: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(name=name)
        self.expression = check if isinstance(check, SafeExpression) else SafeExpression.of(check)
        # Only the names that change are kept: most conditions rename nothing, and share this.
        changed = {n: key for n, key in (rename or {}).items() if n != key}
        self.rename: Mapping[str, str] = changed or _NO_RENAME

    @property
    def reads(self) -> frozenset[str]:
        """The state fields the expression reads (after `rename`)."""
        return frozenset(self.rename.get(n, n) for n in self.expression.names)

    def _lookup(self, name: str) -> Any:
        key = self.rename.get(name, name)
        state = self.state
        if key not in state.fields:
            raise ExpressionError(f"'{key}' is not a state field")
        return state.read_port(key)

    def update(self) -> Status:
        """Evaluate now; never raises."""
        try:
            value = self.expression.evaluate(self._lookup)
        except ExpressionError as exc:
            self.feedback_message = f"cannot evaluate '{self.expression.text}': {exc.message}"
            return Status.FAILURE
        except RuntimeError as exc:  # not bound to a run
            self.feedback_message = str(exc)
            return Status.FAILURE
        if value:
            self.feedback_message = ""
            return Status.SUCCESS
        self.feedback_message = f"false: {self.expression.text}"
        return Status.FAILURE

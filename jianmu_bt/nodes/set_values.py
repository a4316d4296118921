"""SetValues: a node that writes values to the run's state in one update, then succeeds.

Values are literals or `{key}` templates over state (`"{draft}"` copies a value with its type,
`"Report for {topic}"` builds text); each field's reducer applies, and all values are written
together or none is (a refused value is FAILURE with the field and the reason).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from py_trees.common import Status

from jianmu_bt.runtime.async_node import ContextNode
from jianmu_bt.runtime.state_schema import StateValidationError
from jianmu_bt.runtime.templates import TemplateError, references, render


class SetValues(ContextNode):
    """Writes `values` (field -> literal or template) to state; SUCCESS, or FAILURE if refused.

    `templates=False` writes the values exactly as given (braces are not references).
    """

    def __init__(self, name: str, values: Mapping[str, Any], *, templates: bool = True) -> None:
        super().__init__(name=name)
        if not values:
            raise ValueError("SetValues needs at least one value to write")
        self.values = dict(values)
        self.templates = templates

    @property
    def writes(self) -> frozenset[str]:
        """The state fields this node writes."""
        return frozenset(self.values)

    @property
    def reads(self) -> frozenset[str]:
        """The state fields its templates refer to."""
        return frozenset(references(self.values)) if self.templates else frozenset()

    def update(self) -> Status:
        """Render and write all values at once; never raises."""
        try:
            state = self.state
            if self.templates:
                rendered = {key: render(value, state.get) for key, value in self.values.items()}
            else:
                rendered = copy.deepcopy(self.values)  # the state must not share our dicts
            state.update(rendered)
        except (StateValidationError, TemplateError, RuntimeError) as exc:
            self.feedback_message = str(exc)
            return Status.FAILURE
        self.feedback_message = ""
        return Status.SUCCESS

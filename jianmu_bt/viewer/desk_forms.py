"""What the viewer's desk needs while it follows a live run: attending the tree's questions
and external results, and each question's form fields for the page to build its controls.

(Apart from `desk`, which answers through a Source: `sources` uses these, `desk` uses
`sources`.)"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import ExitStack
from typing import Any

from jianmu_bt.runtime.question_forms import form_fields


def attend(tree: Any) -> Callable[[], None]:
    """Attend `tree`'s questions and external results until the returned function is called
    (a tree without a desk is left as it is)."""
    stack = ExitStack()
    for name in ("attend_questions", "attend_results"):
        attending = getattr(tree, name, None)
        if callable(attending):
            stack.enter_context(attending())
    return stack.close


def field_view(field: Any) -> dict[str, Any]:
    """One form field as the page builds its control from it."""
    shown: dict[str, Any] = {
        "name": field.name,
        "type": field.type,
        "title": field.title,
        "description": field.description,
        "required": field.required,
        "choices": [list(choice) for choice in field.choices],
        "multiple": field.multiple,
        "schema": dict(field.schema),
    }
    if field.has_default:
        shown["default"] = field.default
    return shown


def with_fields(data: dict[str, Any]) -> dict[str, Any]:
    """An `input.requested` event's data with `fields`: its form's fields, for the page."""
    schema = data.get("schema")
    if isinstance(schema, Mapping) and "fields" not in data:
        try:
            data["fields"] = [field_view(field) for field in form_fields(schema)]
        except (AttributeError, KeyError, TypeError):  # not a checked form: shown without
            data["fields"] = []
    return data

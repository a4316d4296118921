"""Typed final answers: a JSON Schema (or a pydantic type) the answer must fit, and its checks.

```python
spec = OutputSpec(schema={"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]})
spec = OutputSpec(type=Forecast, validators=[no_past_dates], retries=2)
value = spec.parse('{"city": "Paris"}')      # the validated object, or OutputRejected
```
`parse` takes the model's text (a bare JSON value, or one inside a ```json fence or after some
words), decodes it and validates it: with `schema` by a real JSON Schema validator (the parsed
JSON comes back), with `type` by pydantic (an instance of the type comes back). Then each
validator runs on the value: it returns the value (possibly changed) or raises `ValueError`
(or `OutputRejected`) with words the model can act on. Every refusal is an `OutputRejected`
whose message lists what was wrong, to be sent back to the model, which tries again up to
`retries` times.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

OutputValidator = Callable[[Any], Any]
"""`validator(value) -> value`: raise ValueError with a reason the model can act on to reject."""

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
DEFAULT_NAME = "final_result"


class OutputRejected(ValueError):
    """A final answer that does not fit its output: `problems` say what, for the model."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


class OutputSpec:
    """What a typed final answer must be: `schema` (a JSON Schema) or `type` (a pydantic-able
    Python type), `validators` run after it, `retries` re-asks after a rejected answer."""

    def __init__(
        self,
        schema: Mapping[str, Any] | None = None,
        *,
        type: Any = None,  # the answer's Python type (pydantic-ai's output_type)
        name: str = DEFAULT_NAME,
        description: str | None = None,
        validators: Iterable[OutputValidator] = (),
        retries: int = 2,
        strict: bool | None = None,
    ) -> None:
        if (schema is None) == (type is None):
            raise ValueError("an OutputSpec takes either schema= (JSON Schema) or type=, not both")
        if retries < 0:
            raise ValueError(f"retries must be 0 or more, got {retries}")
        self.name = name
        self.description = description
        self.validators = tuple(validators)
        self.retries = retries
        self.strict = strict
        self._adapter = TypeAdapter(type) if type is not None else None
        if schema is not None:
            self._checker = checked_validator(schema)
            self.schema: dict[str, Any] = dict(schema)
        else:
            self._checker = None
            assert self._adapter is not None
            self.schema = self._adapter.json_schema()

    def instructions(self) -> str:
        """What to tell a model that has no native structured output."""
        about = f" ({self.description})" if self.description else ""
        return (
            f"Give your final answer{about} as one JSON value and nothing else, matching this "
            f"JSON Schema:\n{json.dumps(self.schema, ensure_ascii=False)}"
        )

    def parse(self, text: str) -> Any:
        """The validated value of the answer `text`; OutputRejected saying what is wrong."""
        value = self._decode(text)
        if self._checker is not None:
            errors = sorted(self._checker.iter_errors(value), key=lambda e: list(e.path))
            if errors:
                raise OutputRejected(_schema_problem(error) for error in errors[:10])
        else:
            assert self._adapter is not None
            try:
                value = self._adapter.validate_python(value)
            except ValidationError as exc:
                raise OutputRejected(
                    f"{'.'.join(map(str, e['loc'])) or 'the answer'}: {e['msg']}"
                    for e in exc.errors()[:10]
                ) from None
        for validator in self.validators:
            try:
                value = validator(value)
            except OutputRejected:
                raise
            except ValueError as exc:
                raise OutputRejected([str(exc) or type(exc).__name__]) from None
        return value

    def dump(self, value: Any) -> Any:
        """`value` as JSON-ready data (a pydantic model becomes its dict)."""
        if self._adapter is not None:
            return self._adapter.dump_python(value, mode="json")
        return value

    @staticmethod
    def _decode(text: str) -> Any:
        text = text.strip()
        candidates = [text, *(m.group(1).strip() for m in _FENCE.finditer(text))]
        start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
        if start > 0:
            candidates.append(text[start:])
        for candidate in candidates:
            try:
                return json.JSONDecoder().raw_decode(candidate)[0]
            except ValueError:
                continue
        raise OutputRejected(
            ["the answer is not JSON: reply with only the JSON value the schema describes"]
        )


def checked_validator(schema: Mapping[str, Any]) -> Any:
    """A JSON Schema validator for `schema`; ValueError naming the problem when the schema
    itself is broken (the author's error, said before anything runs)."""
    from jsonschema import exceptions, validators  # type: ignore[import-untyped]

    checker = validators.validator_for(schema)
    try:
        checker.check_schema(schema)
    except exceptions.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        raise ValueError(f"not a valid JSON Schema{f' at {where!r}' if where else ''}: "
                         f"{exc.message}") from None  # fmt: skip
    return checker(schema)


def _schema_problem(error: Any) -> str:
    where = "/".join(str(part) for part in error.absolute_path)
    return f"at '{where}': {error.message}" if where else error.message

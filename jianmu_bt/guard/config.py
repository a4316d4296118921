"""GuardConfig: the `guard:` section of a YAML tree, validated by pydantic, built into policies.

```yaml
guard:
  allow: [calculator, read_file, write_file, http_request]   # anything else is refused
  deny: [bash]
  confirm: [write_file]          # ask the user first
  approve: [http_request]        # hold until a reviewer approves
  budgets: {http: 10, file_write: 3}
  rate_limits: {http_request: "5/60s"}
```
Every key is optional. `GuardConfig.model_json_schema()` gives the schema editors and the tree
loader embed; unknown keys and bad values raise GuardConfigError naming the key.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    StringConstraints,
    ValidationError,
    WithJsonSchema,
)

from jianmu_bt.guard.context import HISTORY_LIMIT
from jianmu_bt.guard.errors import GuardConfigError, describe_validation_error
from jianmu_bt.guard.limits import RATE_PATTERN, EffectBudget, Rate, RateLimit
from jianmu_bt.guard.lists import AllowList, ApprovalRequired, ConfirmList, DenyList
from jianmu_bt.guard.policy import Policy

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]

_RATE_SCHEMA: dict[str, Any] = {
    "description": "At most `count` calls per window: '5/60s', '5/min', '100/1h', "
    "[5, 60] or {count: 5, per_seconds: 60}.",
    "anyOf": [
        {"type": "string", "pattern": RATE_PATTERN, "examples": ["5/60s", "5/min"]},
        {
            "type": "array",
            "prefixItems": [
                {"type": "integer", "minimum": 1, "maximum": HISTORY_LIMIT},
                {"type": "number", "exclusiveMinimum": 0},
            ],
            "minItems": 2,
            "maxItems": 2,
        },
        {
            "type": "object",
            "properties": {
                "count": {"type": "integer", "minimum": 1, "maximum": HISTORY_LIMIT},
                "per_seconds": {"type": "number", "exclusiveMinimum": 0},
            },
            "required": ["count", "per_seconds"],
            "additionalProperties": False,
        },
    ],
}


def _parse_rate(value: Any) -> Rate:
    if isinstance(value, Mapping):
        extra = set(value) - {"count", "per_seconds"}
        if extra or not {"count", "per_seconds"} <= set(value):
            raise ValueError(
                f"a rate mapping has exactly the keys count and per_seconds, got {sorted(value)}"
            )
        return Rate(value["count"], value["per_seconds"])
    return Rate.parse(value)


RateValue = Annotated[
    Rate,
    PlainValidator(_parse_rate),
    PlainSerializer(str, return_type=str),
    WithJsonSchema(_RATE_SCHEMA),
]


class GuardConfig(BaseModel):
    """The guard section of a tree file. Names are tools (aliases work), budgets are effect tags.

    | key           | policy              | meaning                                        |
    |---------------|---------------------|------------------------------------------------|
    | `allow`       | AllowList           | only these tools may run (omit: no allow list) |
    | `deny`        | DenyList            | these tools never run                          |
    | `confirm`     | ConfirmList         | the user confirms before these run             |
    | `approve`     | ApprovalRequired    | a reviewer approves each call (batch is held)  |
    | `budgets`     | EffectBudget        | effect tag -> most successful calls per run    |
    | `rate_limits` | RateLimit           | tool -> "count/window", e.g. "5/60s"           |

    A tool with no effect tags that is not read-only counts as the tag `unknown` in `budgets`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow: list[Name] | None = Field(
        default=None, description="Only these tools may run; any other call is refused."
    )
    deny: list[Name] | None = Field(default=None, description="Tools that never run.")
    confirm: list[Name] | None = Field(
        default=None, description="Tools that need the user's confirmation before each call."
    )
    approve: list[Name] | None = Field(
        default=None, description="Tools whose calls wait for a reviewer's approval."
    )
    budgets: dict[Name, Annotated[int, Field(strict=True, ge=0)]] | None = Field(
        default=None,
        description=(
            "Effect tag -> the most successful calls with it in one run ('unknown': tools that "
            "declare no effect tags and are not read-only)."
        ),
    )
    rate_limits: dict[Name, RateValue] | None = Field(
        default=None, description="Tool -> rate limit, e.g. '5/60s'."
    )

    @classmethod
    def coerce(cls, config: GuardConfig | Mapping[str, Any] | None) -> GuardConfig:
        """A GuardConfig from a mapping (or None: empty); GuardConfigError names each problem."""
        if config is None:
            return cls()
        if isinstance(config, GuardConfig):
            return config
        if not isinstance(config, Mapping):
            raise GuardConfigError(
                [
                    {
                        "loc": "",
                        "msg": f"must be a mapping of {', '.join(cls.model_fields)}, "
                        f"got {type(config).__name__}",
                        "input": config,
                        "type": "mapping_type",
                    }
                ]
            )
        try:
            return cls.model_validate(dict(config))
        except ValidationError as exc:
            raise GuardConfigError(_explain(exc)) from None

    def build_policies(self) -> list[Policy]:
        """The policies this config describes, in a fixed order: deny, allow, budgets, rate
        limits, approve, confirm (the order only decides which reason is shown on a tie)."""
        policies: list[Policy] = []
        if self.deny:
            policies.append(DenyList(self.deny))
        if self.allow is not None:
            policies.append(AllowList(self.allow))
        if self.budgets:
            policies.append(EffectBudget(self.budgets))
        if self.rate_limits:
            policies.append(RateLimit(self.rate_limits))
        if self.approve:
            policies.append(ApprovalRequired(self.approve))
        if self.confirm:
            policies.append(ConfirmList(self.confirm))
        return policies


def _explain(error: ValidationError) -> list[dict[str, Any]]:
    known = list(GuardConfig.model_fields)
    problems = describe_validation_error(error)
    for problem in problems:
        if problem["type"] == "extra_forbidden" and "." not in problem["loc"]:
            close = difflib.get_close_matches(problem["loc"], known, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            problem["msg"] = f"unknown key{hint}; known keys: {', '.join(known)}"
        elif (
            not isinstance(problem["input"], (dict, list))
            and repr(problem["input"]) not in (problem["msg"])
        ):
            problem["msg"] = f"{problem['msg']} (got {problem['input']!r})"
    return problems

"""The `tools:` entry of an external tool: its calls are answered from outside the run.

```yaml
tools:
  - external:
      name: ci_result
      description: Run the CI pipeline on a branch; its verdict comes back when it ends.
      parameters: {type: object, properties: {branch: {type: string}}, required: [branch]}
      output_schema: {type: object, properties: {passed: {type: boolean}}, required: [passed]}
      timeout: 3600          # seconds the run waits for the result (default: no limit)
      default: {passed: false}   # taken after the timeout (without one, the call fails)
```
See `jianmu_bt.tools.external.ExternalTool` and docs/humans.md.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

Text = Annotated[str, StringConstraints(min_length=1)]

#: `default:` when the entry gives none (a default of null is still a default).
UNSET = "__jianmu_no_default__"


class ExternalToolSpec(BaseModel):
    """What an external tool is: its name, description, argument and result schemas, and how
    long a run waits for a result."""

    model_config = ConfigDict(extra="forbid")

    name: Text = Field(description="The tool's name (as an LLM and the tree's steps call it).")
    description: Text = Field(description="What the tool does, for the LLM.")
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}},
        description="The arguments' JSON Schema.",
    )
    output_schema: dict[str, Any] | None = Field(
        None, description="The JSON Schema a supplied result must fit (default: any JSON)."
    )
    timeout: float | None = Field(
        None, gt=0, description="Seconds a run waits for the result (default: no limit)."
    )
    default: Any = Field(UNSET, description="The result taken once the timeout has passed.")
    effect_tags: list[Text] = Field(
        default_factory=list, description="What a call does, for the guard's budgets."
    )

    def build(self) -> Any:
        """The ExternalTool (ValueError for a schema or default it cannot take)."""
        from jianmu_bt.tools.external import NO_DEFAULT, ExternalTool

        return ExternalTool(
            self.name,
            self.description,
            parameters=self.parameters,
            output_schema=self.output_schema,
            timeout=self.timeout,
            default=NO_DEFAULT if self.default == UNSET else self.default,
            effect_tags=self.effect_tags,
        )


class ExternalToolEntry(BaseModel):
    """A tool whose calls are handed out and answered from outside: `{external: {name: ...}}`."""

    model_config = ConfigDict(extra="forbid")

    external: ExternalToolSpec

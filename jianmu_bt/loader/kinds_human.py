"""Node kinds that involve a person: `ask` (a question whose answer goes to state).

```yaml
- ask:
    name: PickPlan
    question: "Which plan for {topic}?"
    choices: [careful, fast]        # or schema: a JSON Schema (a number, a form of fields...)
    output: plan
    default: careful                # taken after `wait` seconds, or when nobody can be asked
    wait: 3600
```
See `jianmu_bt.nodes.ask` for how the run waits, pauses and resumes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field, model_validator

from jianmu_bt.loader.model import NodeConfig, StateKey, Text
from jianmu_bt.loader.node_facts import NodeIO, NodeProblem
from jianmu_bt.loader.registry import NodeKind, register_kind
from jianmu_bt.loader.template_refs import template_refs

if TYPE_CHECKING:
    from py_trees.behaviour import Behaviour

    from jianmu_bt.loader.context import BuildContext
    from jianmu_bt.loader.records import NodeRecord

#: `default:` when the file gives none (a default of null is still a default).
_UNSET = "__jianmu_no_default__"


class AskConfig(NodeConfig):
    """Asks a person a question; the run waits (or pauses) for the answer, checked against its
    schema, and writes it to `output`."""

    question: Text = Field(description="The question; may hold {key} references to state.")
    choices: list[str] | None = Field(
        None, min_length=1, description="The answer is one of these (a shorthand for `schema`)."
    )
    answer_schema: dict[str, Any] | None = Field(
        None,
        alias="schema",
        description="The answer's JSON Schema: a string (free text, the default), a number, an "
        "enum, or an object of such fields (a form).",
    )
    output: StateKey | None = Field(None, description="Write the answer to this field.")
    default: Any = Field(
        _UNSET, description="The answer taken when `wait` runs out or nobody can be asked."
    )
    wait: float | None = Field(
        None, gt=0, description="Seconds to wait for an answer (default: no limit)."
    )

    model_config = {**NodeConfig.model_config, "populate_by_name": True}

    @model_validator(mode="after")
    def _one_schema(self) -> AskConfig:
        if self.choices is not None and self.answer_schema is not None:
            raise ValueError("give either `choices` or `schema`, not both")
        return self

    @property
    def schema_of_answer(self) -> dict[str, Any]:
        """The answer's JSON Schema (free text when the file names none)."""
        if self.choices is not None:
            return {"type": "string", "enum": list(self.choices)}
        return dict(self.answer_schema or {"type": "string"})


def _ask_io(config: AskConfig) -> NodeIO:
    from jianmu_bt.runtime.question_forms import answer_schema_problem
    from jianmu_bt.tools.external import value_problems

    schema = config.schema_of_answer
    where = ("choices",) if config.choices is not None else ("schema",)
    problem = answer_schema_problem(schema)
    if problem:
        raise NodeProblem(problem, where, code="ask-schema")
    if config.default != _UNSET:
        problems = value_problems(schema, config.default, "default")
        if problems:
            raise NodeProblem(
                "the default does not fit the answer schema: " + "; ".join(problems),
                ("default",),
                code="ask-schema",
            )
    io = NodeIO()
    io.reads.update(template_refs(config.question, ("question",)))
    if config.output:
        io.writes[config.output] = ("output",)
        io.schema_writes.append((config.output, schema, where))
    return io


def _ask(record: NodeRecord, children: list[Behaviour], ctx: BuildContext) -> Behaviour:
    from jianmu_bt.nodes.ask import Ask
    from jianmu_bt.tools.external import NO_DEFAULT

    config = record.config_as(AskConfig)
    keys = record.keys
    return Ask(
        record.name,
        keys.template(config.question),
        config.schema_of_answer,
        keys(config.output) if config.output else None,
        default=NO_DEFAULT if config.default == _UNSET else config.default,
        timeout=config.wait,
    )


register_kind(NodeKind("ask", AskConfig, "action", _ask, io=_ask_io, default_name=lambda c: "Ask"))

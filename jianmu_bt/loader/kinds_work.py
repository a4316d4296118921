"""Node kinds that do work: tool steps, executor, LLM turn, condition, set (the agent loop,
built from the same parts, is `kinds_agent`).

The node classes (and py_trees under them) are imported by the builders, when a tree is built:
validating a file needs only the configs, their state keys and the expressions.
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, Any

from jianmu_bt.loader.model import (
    ConditionConfig,
    ExecutorConfig,
    SetConfig,
    ToolStepConfig,
)
from jianmu_bt.loader.model_agents import AgentConfig, LLMStepConfig
from jianmu_bt.loader.node_facts import EITHER, NodeIO, NodeProblem, Outcome
from jianmu_bt.loader.positions import Path
from jianmu_bt.loader.registry import NodeKind, register_kind
from jianmu_bt.loader.servers import prompt_io, prompt_source_for
from jianmu_bt.loader.template_refs import template_refs
from jianmu_bt.runtime.expressions import ExpressionError, SafeExpression
from jianmu_bt.runtime.templates import REFERENCE
from jianmu_bt.tools.retry import RetryPolicy

if TYPE_CHECKING:
    from py_trees.behaviour import Behaviour

    from jianmu_bt.loader.context import BuildContext
    from jianmu_bt.loader.records import NodeRecord
    from jianmu_bt.nodes.options import ExecutorOptions

Children = list["Behaviour"]


def subset_refs(names: list[str] | None) -> list[tuple[str, Path]]:
    """The tools a node's `tools:` list names, each with its path (for the analysis)."""
    return [(name, ("tools", i)) for i, name in enumerate(names or ())]


def text_output(io: NodeIO, output: str | None) -> None:
    """An LLM's text answer written to `output` (type-checked as text against that field)."""
    if output:
        io.writes[output] = ("output",)
        io.text_writes.append((output, ("output",)))


def answer_output(io: NodeIO, config: LLMStepConfig | AgentConfig) -> None:
    """An LLM's answer written to `config.output`: text, or a typed object checked against the
    field by its `output_schema`; the output checks are checked as expressions here."""
    if config.output_schema is None:
        text_output(io, config.output)
        if config.output_checks:
            raise NodeProblem("output_checks need an output_schema", ("output_checks",))
        return
    from jianmu_bt.llm.output import checked_validator

    try:
        checked_validator(config.output_schema)
    except ValueError as exc:  # a broken schema, said where it is
        raise NodeProblem(
            f"output_schema is {exc}", ("output_schema",), code="output-schema"
        ) from None
    for i, check in enumerate(config.output_checks):
        try:
            SafeExpression.of(check.check)
        except ExpressionError as exc:
            raise NodeProblem(
                exc.message, ("output_checks", i, "check"), offset=exc.offset
            ) from None
    if config.output:
        io.writes[config.output] = ("output",)
        io.schema_writes.append((config.output, config.output_schema, ("output_schema",)))


def answer_policy(config: LLMStepConfig | AgentConfig) -> Any:
    """The node's `TurnPolicy` from its config (the typed output with its checks)."""
    from jianmu_bt.llm.output import OutputSpec
    from jianmu_bt.nodes.turn_outcome import TurnPolicy

    output = None
    if config.output_schema is not None:
        checks = [_output_check(check.check, check.message) for check in config.output_checks]
        output = OutputSpec(config.output_schema, validators=checks, retries=config.output_retries)
    return TurnPolicy(output=output, on_refusal=config.on_refusal, on_length=config.on_length)


def _output_check(text: str, message: str | None) -> Any:
    """A validator: the answer passes when the expression over its fields is true."""
    expression = SafeExpression.of(text)

    def check(value: Any) -> Any:
        fields = value if isinstance(value, dict) else {}

        def lookup(name: str) -> Any:
            if name == "output":
                return value
            if name not in fields:
                raise ExpressionError(f"the answer has no field {name!r}")
            return fields[name]

        try:
            passed = expression.evaluate(lookup)
        except ExpressionError as exc:
            raise ValueError(f"{message or text} ({exc.message})") from None
        if not passed:
            raise ValueError(message or f"the answer must satisfy: {text}")
        return value

    return check


# --- tool step --------------------------------------------------------------------------------


def _tool_io(config: ToolStepConfig) -> NodeIO:
    io = NodeIO(tools=[(config.tool, ("tool",))], output_tool=config.tool)
    io.reads.update(template_refs(config.arguments, ("arguments",)))
    if config.input_key:
        io.reads[config.input_key] = ("input_key",)
    if config.output:
        io.writes[config.output] = ("output",)
    return io


def _tool(record: NodeRecord, children: Children, ctx: BuildContext) -> Behaviour:
    from jianmu_bt.nodes.options import CallOptions
    from jianmu_bt.nodes.tool_node import ToolNode

    config = record.config_as(ToolStepConfig)
    keys = record.keys
    node = ToolNode(
        ctx.tool(config.tool),
        name=record.name,
        input_key=keys(config.input_key) if config.input_key else None,
        output_key=keys(config.output) if config.output else None,
        arguments=keys.template(config.arguments),
        options=CallOptions(
            retry=RetryPolicy.from_retries(config.max_retries, config.retry_backoff),
            call_timeout=config.call_timeout,
        ),
        timeout=config.timeout,
    )
    ctx.bind(record, [config.tool], lambda tools: setattr(node, "tool", tools.tools[0]))
    return node


register_kind(
    NodeKind(
        "tool",
        ToolStepConfig,
        "action",
        _tool,
        io=_tool_io,
        default_name=lambda c: c.tool,
    )
)


# --- executor and LLM turn --------------------------------------------------------------------


def _executor_io(config: ExecutorConfig) -> NodeIO:
    io = NodeIO(tools=subset_refs(config.tools))
    for key, where in ((config.actions_key, "actions_key"), (config.messages_key, "messages_key")):
        io.reads[key] = (where,)
        io.writes[key] = (where,)
    io.writes.setdefault("tool_effects", ())
    io.writes.setdefault("guard", ())
    return io


def executor_options(config: ExecutorConfig | AgentConfig, **more: Any) -> ExecutorOptions:
    """How an executor (or an agent's) runs its calls, from the node's keys in the file."""
    from jianmu_bt.nodes.options import ExecutorOptions

    return ExecutorOptions(
        retry=RetryPolicy.from_retries(config.max_retries),
        call_timeout=config.call_timeout,
        execution_mode=config.execution_mode,
        **more,
    )


def _executor(record: NodeRecord, children: Children, ctx: BuildContext) -> Behaviour:
    from jianmu_bt.nodes.tool_executor import ToolExecutor  # the agent parts load on use

    config = record.config_as(ExecutorConfig)
    node = ToolExecutor(
        ctx.tools(config.tools),
        name=record.name,
        options=executor_options(
            config,
            max_concurrency=config.max_concurrency,
            actions_key=record.keys(config.actions_key),
            messages_key=record.keys(config.messages_key),
        ),
        timeout=config.timeout,
    )
    ctx.bind(record, config.tools, lambda tools: setattr(node, "toolset", tools))
    return node


def _llm_io(config: LLMStepConfig) -> NodeIO:
    io = NodeIO(tools=subset_refs(config.tools))
    io.reads.update(template_refs(config.system_prompt, ("system_prompt",)))
    io.reads[config.messages_key] = ("messages_key",)
    io.writes[config.messages_key] = ("messages_key",)
    io.writes[config.actions_key] = ("actions_key",)
    io.writes.setdefault("usage", ())
    answer_output(io, config)
    return prompt_io(config.prompt, io)


def _llm(record: NodeRecord, children: Children, ctx: BuildContext) -> Behaviour:
    from jianmu_bt.nodes.llm_node import AgentLLMNode  # the LLM layer loads on use

    config = record.config_as(LLMStepConfig)
    keys = record.keys
    node = AgentLLMNode(
        None,
        ctx.tools(config.tools),
        name=record.name,
        system_prompt=keys.template(config.system_prompt),
        messages_key=keys(config.messages_key),
        actions_key=keys(config.actions_key),
        answer_key=keys(config.output) if config.output else None,
        options=config.options,
        stream=config.stream,
        timeout=config.timeout,
        prompt=prompt_source_for(config.prompt, record, ctx),
        policy=answer_policy(config),
        limits=config.limits,
    )
    ctx.bind(record, config.tools, lambda tools: setattr(node, "toolset", tools))
    return node


register_kind(
    NodeKind(
        "executor",
        ExecutorConfig,
        "action",
        _executor,
        io=_executor_io,
        default_name=lambda c: "Tools",
    )
)
register_kind(
    NodeKind(
        "llm",
        LLMStepConfig,
        "action",
        _llm,
        io=_llm_io,
        default_name=lambda c: "LLM",
    )
)


# --- condition and set ------------------------------------------------------------------------


def _expression(config: ConditionConfig) -> SafeExpression:
    # Parsed once per node: io, outcome and build share it (kept in the config's slot).
    compiled: SafeExpression | None = getattr(config, "_expression", None)
    if compiled is None:
        try:
            compiled = SafeExpression(config.check)
        except ExpressionError as exc:
            raise NodeProblem(
                f"bad condition: {exc.message}",
                ("check",),
                code="bad-expression",
                offset=exc.offset,
            ) from None
        object.__setattr__(config, "_expression", compiled)  # a slot: no pydantic checks
    return compiled


def _condition_io(config: ConditionConfig) -> NodeIO:
    return NodeIO(reads=dict.fromkeys(sorted(_expression(config).names), ("check",)))


def _condition_outcome(config: ConditionConfig, children: list[Outcome]) -> Outcome:
    expression = _expression(config)
    if expression.names:
        return EITHER
    try:
        value = bool(expression.evaluate(lambda name: None))
    except ExpressionError:
        return Outcome(can_succeed=False, can_fail=True)
    return Outcome(can_succeed=value, can_fail=not value)


@functools.cache
def _node_class(module: str, name: str) -> Any:
    """`jianmu_bt.nodes.<module>.<name>`, imported on first use (an import statement in a
    builder costs more than the lookup of this cache, a node at a time)."""
    return getattr(importlib.import_module(f"jianmu_bt.nodes.{module}"), name)


def _condition(record: NodeRecord, children: Children, ctx: BuildContext) -> Behaviour:
    config = record.config_as(ConditionConfig)
    expression = _expression(config)
    condition = _node_class("condition", "Condition")
    built: Behaviour = condition(
        record.name, expression, rename={n: record.keys(n) for n in expression.names}
    )
    return built


def _short(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


register_kind(
    NodeKind(
        "condition",
        ConditionConfig,
        "condition",
        _condition,
        io=_condition_io,
        outcome=_condition_outcome,
        default_name=lambda c: _short(c.check),
    )
)


def _set_io(config: SetConfig) -> NodeIO:
    io = NodeIO()
    for key, value in config.values.items():
        where: Path = ("values", key)
        io.writes[key] = where
        refs = template_refs(value, where)
        io.reads.update({k: v for k, v in refs.items() if k not in io.reads})
        if isinstance(value, str) and refs:
            whole = REFERENCE.fullmatch(value)
            if whole and whole.group(1) and "." not in whole.group(1):
                io.copies.append((whole.group(1), key, where))
            elif not whole:
                io.text_writes.append((key, where))
        elif not refs:
            io.literal_writes.append((key, value, where))
    return io


def _set(record: NodeRecord, children: Children, ctx: BuildContext) -> Behaviour:
    config = record.config_as(SetConfig)
    keys = record.keys
    set_values = _node_class("set_values", "SetValues")
    built: Behaviour = set_values(
        record.name, {keys(k): keys.template(v) for k, v in config.values.items()}
    )
    return built


register_kind(
    NodeKind(
        "set",
        SetConfig,
        "action",
        _set,
        io=_set_io,
        outcome=lambda config, children: Outcome(can_succeed=True, can_fail=False),
        default_name=lambda c: _short("set " + ", ".join(c.values)),
    )
)

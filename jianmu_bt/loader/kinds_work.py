"""Node kinds that do work: tool steps, executor, LLM turn, agent loop, condition, set.

The node classes (and py_trees under them) are imported by the builders, when a tree is built:
validating a file needs only the configs, their state keys and the expressions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from jianmu_bt.loader.model import (
    AgentConfig,
    ConditionConfig,
    ExecutorConfig,
    LLMStepConfig,
    SetConfig,
    ToolStepConfig,
)
from jianmu_bt.loader.node_facts import EITHER, NodeIO, NodeProblem, Outcome
from jianmu_bt.loader.positions import Path
from jianmu_bt.loader.registry import NodeKind, register_kind
from jianmu_bt.runtime.expressions import ExpressionError, SafeExpression
from jianmu_bt.runtime.templates import REFERENCE
from jianmu_bt.tools.retry import RetryPolicy

if TYPE_CHECKING:
    from py_trees.behaviour import Behaviour

    from jianmu_bt.loader.context import BuildContext
    from jianmu_bt.loader.records import NodeRecord
    from jianmu_bt.nodes.options import ExecutorOptions

Children = list["Behaviour"]


def template_refs(value: Any, path: Path) -> dict[str, Path]:
    """Each state key referenced as `{key}` in `value` -> the path of the first string naming it."""
    found: dict[str, Path] = {}
    if isinstance(value, str):
        for match in REFERENCE.finditer(value):
            if match.group(1):
                found.setdefault(match.group(1).split(".")[0], path)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            for ref, where in template_refs(item, (*path, str(key))).items():
                found.setdefault(ref, where)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            for ref, where in template_refs(item, (*path, index)).items():
                found.setdefault(ref, where)
    return found


def _subset_refs(names: list[str] | None) -> list[tuple[str, Path]]:
    return [(name, ("tools", i)) for i, name in enumerate(names or ())]


def _text_output(io: NodeIO, output: str | None) -> None:
    """An LLM's text answer written to `output` (type-checked as text against that field)."""
    if output:
        io.writes[output] = ("output",)
        io.text_writes.append((output, ("output",)))


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
    io = NodeIO(tools=_subset_refs(config.tools))
    for key, where in ((config.actions_key, "actions_key"), (config.messages_key, "messages_key")):
        io.reads[key] = (where,)
        io.writes[key] = (where,)
    io.writes.setdefault("tool_effects", ())
    io.writes.setdefault("guard", ())
    return io


def _executor_options(config: ExecutorConfig | AgentConfig, **more: Any) -> ExecutorOptions:
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
        options=_executor_options(
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
    io = NodeIO(tools=_subset_refs(config.tools))
    io.reads.update(template_refs(config.system_prompt, ("system_prompt",)))
    io.reads[config.messages_key] = ("messages_key",)
    io.writes[config.messages_key] = ("messages_key",)
    io.writes[config.actions_key] = ("actions_key",)
    io.writes.setdefault("usage", ())
    _text_output(io, config.output)
    return io


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


# --- agent ------------------------------------------------------------------------------------


def _agent_io(config: AgentConfig) -> NodeIO:
    _agent_services(config)  # checked with the analysis, so a validation (no build) sees them
    io = NodeIO(tools=_subset_refs(config.tools))
    io.reads.update(template_refs(config.system_prompt, ("system_prompt",)))
    io.reads.update(template_refs(config.goal, ("goal",)))
    io.reads[config.messages_key] = ("messages_key",)
    for key in (config.messages_key, "actions", "usage", "tool_effects", "guard"):
        io.writes.setdefault(key, ("messages_key",) if key == config.messages_key else ())
    _text_output(io, config.output)
    return io


def _run_guard(node: Behaviour) -> Callable[[], Any]:
    """The run's guard (`services["guard"]`: the file's or `load_tree(guard=)`) as `node`
    sees it, looked up on each use (the run's services are known only once it starts)."""

    def lookup() -> Any:
        context = getattr(node, "context", None)
        return context.services.get("guard") if context is not None else None

    return lookup


def _agent_services(config: AgentConfig) -> tuple[Any, Any]:
    """The agent's own LLM provider and guard (None when it has none), from its config; a bad
    config is a NodeProblem at its key. The LLM and guard layers load only for such agents."""
    provider = guard = None
    if config.llm is not None:
        from jianmu_bt.llm import LLMConfigurationError, provider_from_config

        try:
            provider = provider_from_config(config.llm)
        except LLMConfigurationError as exc:
            raise NodeProblem(str(exc), ("llm",), code="llm-config") from None
    if config.guard is not None:
        from jianmu_bt.guard import GuardConfigError, GuardEnforcer

        try:
            guard = GuardEnforcer.from_config(config.guard)
        except GuardConfigError as exc:
            raise NodeProblem(str(exc), ("guard",), code="guard-config") from None
    return provider, guard


def _agent(record: NodeRecord, children: Children, ctx: BuildContext) -> Behaviour:
    from jianmu_bt.guard import LayeredGuard
    from jianmu_bt.nodes.agent import react_agent
    from jianmu_bt.nodes.llm_node import AgentLLMNode
    from jianmu_bt.nodes.tool_executor import ToolExecutor

    config = record.config_as(AgentConfig)
    keys = record.keys
    provider, guard = _agent_services(config)
    if provider is not None:
        ctx.owned_llms.append(provider)
    if guard is not None:
        ctx.guards.append(guard)
    subtree = react_agent(
        record.name,
        tools=ctx.tools(config.tools),
        provider=provider,
        goal=keys.template(config.goal),
        system_prompt=keys.template(config.system_prompt),
        max_iterations=config.max_iterations,
        output_key=keys(config.output) if config.output else None,
        messages_key=keys(config.messages_key),
        actions_key=keys("actions"),
        options=config.options,
        tool_options=_executor_options(config),
        stream=config.stream,
    )
    parts = [n for n in subtree.iterate() if isinstance(n, (AgentLLMNode, ToolExecutor))]
    if guard is not None:  # the agent's guard adds to the run's, never replaces it
        for part in parts:
            if isinstance(part, ToolExecutor):
                part.guard = LayeredGuard(_run_guard(part), guard)

    def rebind(tools: Any) -> None:
        for part in parts:
            part.toolset = tools

    ctx.bind(record, config.tools, rebind)
    return subtree


register_kind(
    NodeKind(
        "agent",
        AgentConfig,
        "agent",
        _agent,
        io=_agent_io,
        default_name=lambda c: "Agent",
    )
)


# --- condition and set ------------------------------------------------------------------------


def _expression(config: ConditionConfig) -> SafeExpression:
    # Parsed once per node: io, outcome and build share it. Kept in the config's private
    # values, read directly: pydantic's attribute path for a private name is slow.
    private = config.__pydantic_private__
    compiled: SafeExpression | None = private.get("_compiled") if private else None
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
        config._compiled = compiled
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


def _condition(record: NodeRecord, children: Children, ctx: BuildContext) -> Behaviour:
    config = record.config_as(ConditionConfig)
    expression = _expression(config)
    from jianmu_bt.nodes.condition import Condition

    return Condition(record.name, expression, rename={n: record.keys(n) for n in expression.names})


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
    from jianmu_bt.nodes.set_values import SetValues

    return SetValues(record.name, {keys(k): keys.template(v) for k, v in config.values.items()})


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

"""The `agent` node kind: the ReAct loop (`jianmu_bt.nodes.agent.react_agent`) from YAML.

```yaml
- agent: {goal: "Answer: {question}", tools: [calculator], max_iterations: 5, output: answer}
```
An agent may bring its own `llm:` and `guard:` (the guard adds to the run's, never replaces it)
and an MCP server's prompt (`prompt:`, see `jianmu_bt.loader.servers`). Its parts are the
working kinds' (`kinds_work`): the LLM turn and the executor, with the executor's options.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jianmu_bt.loader.kinds_work import answer_output, answer_policy, executor_options, subset_refs
from jianmu_bt.loader.model_agents import AgentConfig
from jianmu_bt.loader.node_facts import NodeIO, NodeProblem
from jianmu_bt.loader.registry import NodeKind, register_kind
from jianmu_bt.loader.servers import prompt_io, prompt_source_for
from jianmu_bt.loader.template_refs import template_refs

if TYPE_CHECKING:
    from py_trees.behaviour import Behaviour

    from jianmu_bt.loader.context import BuildContext
    from jianmu_bt.loader.records import NodeRecord


def _agent_io(config: AgentConfig) -> NodeIO:
    _agent_services(config)  # checked with the analysis, so a validation (no build) sees them
    io = NodeIO(tools=subset_refs(config.tools))
    io.reads.update(template_refs(config.system_prompt, ("system_prompt",)))
    io.reads.update(template_refs(config.goal, ("goal",)))
    for i, entry in enumerate(config.attachments):
        kind = "image" if entry.image is not None else "file"
        io.reads.update(template_refs(entry.image or entry.file, ("attachments", i, kind)))
    io.reads[config.messages_key] = ("messages_key",)
    for key in (config.messages_key, "actions", "usage", "tool_effects", "guard"):
        io.writes.setdefault(key, ("messages_key",) if key == config.messages_key else ())
    answer_output(io, config)
    return prompt_io(config.prompt, io)


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


def _agent(record: NodeRecord, children: list[Behaviour], ctx: BuildContext) -> Behaviour:
    from jianmu_bt.guard import LayeredGuard
    from jianmu_bt.nodes.agent import react_agent
    from jianmu_bt.nodes.llm_node import AgentLLMNode
    from jianmu_bt.nodes.tool_executor import ToolExecutor

    config = record.config_as(AgentConfig)
    keys = record.keys
    prompt = prompt_source_for(config.prompt, record, ctx)  # before anything is owned
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
        tool_options=executor_options(config),
        stream=config.stream,
        prompt=prompt,
        policy=answer_policy(config),
        limits=config.limits,
        attachments=_attachments(config, keys),
        workspace=_workspace(record),
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


def _attachments(config: AgentConfig, keys: Any) -> list[Any]:
    from jianmu_bt.nodes.attachments import Attachment

    return [
        Attachment("image", keys.template(e.image))
        if e.image is not None
        else Attachment("file", keys.template(e.file))
        for e in config.attachments
    ]


def _workspace(record: NodeRecord) -> Path:
    """Where an agent's attachment paths are read: the file's `tool_options.workspace` (from the
    file's folder), else the file's folder (the current folder for a tree given as text)."""
    unit = record.unit
    base = unit.path.parent if unit.path is not None else Path.cwd()
    workspace = unit.model.tool_options.get("workspace")
    return (base / str(workspace)) if workspace else base


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

"""The `handoff` node kind: agents that pass one conversation between them (`nodes.handoff`).

```yaml
- handoff:
    name: Desk
    goal: "{question}"
    agents:
      - {name: Triage, system_prompt: "Route the user.", handoffs: [Billing, Tech]}
      - {name: Billing, description: "refunds, invoices", tools: [refund]}
      - {name: Tech, description: "bugs and outages", tools: [status_page]}
```
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jianmu_bt.loader.kinds_work import text_output
from jianmu_bt.loader.model_agents import HandoffConfig
from jianmu_bt.loader.node_facts import NodeIO, NodeProblem
from jianmu_bt.loader.registry import NodeKind, register_kind
from jianmu_bt.loader.template_refs import template_refs

if TYPE_CHECKING:
    from py_trees.behaviour import Behaviour

    from jianmu_bt.loader.context import BuildContext
    from jianmu_bt.loader.records import NodeRecord


def _handoff_io(config: HandoffConfig) -> NodeIO:
    names = [agent.name for agent in config.agents]
    if len(set(names)) != len(names):
        raise NodeProblem(f"agent names must be distinct, got {', '.join(names)}", ("agents",))
    if config.start is not None and config.start not in names:
        raise NodeProblem(f"no agent '{config.start}' in the group", ("start",))
    io = NodeIO()
    io.reads.update(template_refs(config.goal, ("goal",)))
    for i, agent in enumerate(config.agents):
        for target in agent.handoffs or ():
            if target not in names:
                raise NodeProblem(
                    f"agent '{agent.name}' hands off to '{target}', which is not in the group "
                    f"({', '.join(names)})",
                    ("agents", i, "handoffs"),
                )
        io.tools += [(name, ("agents", i, "tools", j)) for j, name in enumerate(agent.tools)]
        io.reads.update(template_refs(agent.system_prompt, ("agents", i, "system_prompt")))
    io.reads[config.messages_key] = ("messages_key",)
    for key in (config.messages_key, "actions", "usage", "tool_effects", "guard"):
        io.writes.setdefault(key, ("messages_key",) if key == config.messages_key else ())
    text_output(io, config.output)
    return io


def _handoff(record: NodeRecord, children: list[Behaviour], ctx: BuildContext) -> Behaviour:
    from jianmu_bt.llm import LLMConfigurationError, provider_from_config
    from jianmu_bt.nodes.handoff import HandoffAgent, handoff_agents

    config = record.config_as(HandoffConfig)
    keys = record.keys
    agents = []
    for i, member in enumerate(config.agents):
        provider: Any = None
        if member.llm is not None:
            try:
                provider = provider_from_config(member.llm)
            except LLMConfigurationError as exc:
                raise NodeProblem(str(exc), ("agents", i, "llm"), code="llm-config") from None
            ctx.owned_llms.append(provider)
        agents.append(
            HandoffAgent(
                member.name,
                member.description,
                system_prompt=keys.template(member.system_prompt),
                tools=list(ctx.tools(member.tools)) if member.tools else [],
                provider=provider,
                handoffs=member.handoffs,
                max_iterations=member.max_iterations,
                limits=member.limits,
                options=member.options,
            )
        )
    return handoff_agents(
        record.name,
        agents,
        goal=keys.template(config.goal),
        start=config.start,
        max_handoffs=config.max_handoffs,
        output_key=keys(config.output) if config.output else None,
        messages_key=keys(config.messages_key),
        actions_key=keys("actions"),
    )


register_kind(
    NodeKind(
        "handoff",
        HandoffConfig,
        "agent",
        _handoff,
        io=_handoff_io,
        default_name=lambda c: "Agents",
    )
)

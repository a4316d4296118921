"""The build stage: node records -> py_trees behaviours, children first, each with its NodeInfo.

Every record is built by its kind's builder (the registry's `NodeKind.build`), given the
behaviours of its children and the `BuildContext` (tools, and where to leave what the Tree will
own); a builder's `NodeProblem` or failure becomes a located diagnostic. Each behaviour built is
tagged with its `NodeInfo`; the parts an `agent` expands to are tagged as parts of it.
"""

from __future__ import annotations

import functools

import py_trees
from py_trees.behaviour import Behaviour
from pydantic import BaseModel

from jianmu_bt.loader.context import BuildContext
from jianmu_bt.loader.diagnostics import Diagnostic
from jianmu_bt.loader.node_facts import NodeProblem
from jianmu_bt.loader.node_info import ATTRIBUTE, NodeInfo
from jianmu_bt.loader.records import NodeRecord
from jianmu_bt.loader.registry import get_kind

GROUPED = ("agent", "handoff")
"""Kinds built as several behaviours (their parts are tagged as parts of the node)."""


@functools.cache
def _parts() -> dict[type, tuple[str, str, str]]:
    """The parts an `agent` expands to: class -> (part, kind, category) (nodes load on use)."""
    from jianmu_bt.nodes.agent import AddMessage, AgentLoop
    from jianmu_bt.nodes.llm_node import AgentLLMNode
    from jianmu_bt.nodes.tool_executor import ToolExecutor

    return {
        AddMessage: ("goal", "add_message", "action"),
        AgentLoop: ("loop", "agent_loop", "decorator"),
        AgentLLMNode: ("llm", "llm", "action"),
        ToolExecutor: ("executor", "executor", "action"),
        py_trees.composites.Sequence: ("turn", "sequence", "composite"),
    }


@functools.cache
def _detail_fields(config_class: type[BaseModel]) -> tuple[tuple[str, ...], bool]:
    """Which of the fields a detail is taken from a config class has (in order), and whether it
    has `values`: worked out once a class, not once a node."""
    fields = config_class.__pydantic_fields__  # `model_fields`, without its slow accessor
    named = tuple(f for f in ("tool", "check", "class_", "goal", "uri") if f in fields)
    return named, "values" in fields


def _detail(record: NodeRecord) -> str:
    config = record.config
    if record.kind == "subtree":
        return record.subtree or ""
    named, has_values = _detail_fields(type(config))
    values = vars(config)  # a pydantic model's field values (getattr's miss path is slow)
    for attribute in named:
        value = values.get(attribute)
        if isinstance(value, str):
            return value
    mapping = values.get("values") if has_values else None
    return ", ".join(mapping) if isinstance(mapping, dict) else ""


def _annotate(record: NodeRecord, behaviour: Behaviour, category: str) -> None:
    line, col = record.unit.source.key((*record.path, record.kind))
    group = record.id if record.kind in GROUPED else None
    info = NodeInfo(
        record.id,
        record.kind,
        category,
        behaviour.name,
        record.unit.file,
        line,
        col,
        _detail(record),
        group,
        None,
    )
    setattr(behaviour, ATTRIBUTE, info)
    if record.kind not in GROUPED:
        return
    for inner in behaviour.iterate():
        if inner is behaviour or hasattr(inner, ATTRIBUTE):
            continue
        parts = _parts()
        part, inner_kind, inner_category = parts.get(type(inner), ("part", "behaviour", "action"))
        # A hand-off group has several agents: their parts are told apart by their names.
        where = part if record.kind == "agent" else inner.name
        setattr(
            inner,
            ATTRIBUTE,
            NodeInfo(
                f"{record.id}/{where}",
                inner_kind,
                inner_category,
                inner.name,
                record.unit.file,
                line,
                col,
                info.detail if part == "goal" else "",
                record.id,
                part,
            ),
        )


def build_behaviours(
    records: dict[str, NodeRecord], root_id: str, ctx: BuildContext
) -> tuple[Behaviour | None, list[Diagnostic]]:
    """Build every record (children first); the root behaviour, and the problems met."""
    built: dict[str, Behaviour] = {}
    problems: list[Diagnostic] = []
    for record in reversed(list(records.values())):  # pre-order reversed: children first
        kind = get_kind(record.kind)
        if kind is None:  # unreachable: validation refuses unknown kinds
            continue
        children = [built[c] for c in record.children if c in built]
        try:
            behaviour = kind.build(record, children, ctx)
        except NodeProblem as exc:
            problems.append(record.diagnostic(exc.message, exc.code, exc.path))
            continue
        except Exception as exc:  # a builder's bug or a library refusing: located, no traceback
            problems.append(
                record.diagnostic(
                    f"cannot build this {record.kind} node: {type(exc).__name__}: {exc}",
                    "build-error",
                )
            )
            continue
        _annotate(record, behaviour, kind.category)
        built[record.id] = behaviour
    return built.get(root_id), problems

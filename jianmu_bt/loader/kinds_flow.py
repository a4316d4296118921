"""Control-flow node kinds: composites, decorators, status converters, subtree, behaviour.

py_trees is imported by the builders, when a tree is built: validating a file needs only the
configs and the outcome rules (`jianmu validate` starts faster without it).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jianmu_bt.loader.behaviour_class import load_behaviour_class
from jianmu_bt.loader.model import (
    BehaviourConfig,
    DecoratorConfig,
    InverterConfig,
    OneShotConfig,
    ParallelConfig,
    RepeatConfig,
    RetryConfig,
    SelectorConfig,
    SequenceConfig,
    StatusConverterConfig,
    SubtreeConfig,
    TimeoutConfig,
)
from jianmu_bt.loader.node_facts import NodeIO, NodeProblem, Outcome
from jianmu_bt.loader.registry import NodeKind, register_kind

if TYPE_CHECKING:
    from py_trees.behaviour import Behaviour

    from jianmu_bt.loader.context import BuildContext
    from jianmu_bt.loader.records import NodeRecord

Children = list["Behaviour"]
Build = Callable[["NodeRecord", Children, "BuildContext"], "Behaviour"]
Rule = Callable[[Any, list[Outcome]], Outcome]
Namer = Callable[[Any], str]


# --- composites -------------------------------------------------------------------------------


@functools.cache
def _lean(module: str, name: str) -> Any:
    """The lean (`jianmu_bt.runtime.lean`) form of the py_trees class `py_trees.<module>.<name>`."""
    from jianmu_bt.runtime.lean import lean

    return lean(getattr(importlib.import_module(f"py_trees.{module}"), name))


def _composite(name: str, model: type[SequenceConfig | SelectorConfig]) -> Build:
    def build(record: NodeRecord, children: Children, ctx: BuildContext) -> Behaviour:
        memory = record.config_as(model).memory
        built: Behaviour = _lean("composites", name)(record.name, memory=memory, children=children)
        return built

    return build


def _parallel(record: NodeRecord, children: Children, ctx: BuildContext) -> Behaviour:
    import py_trees

    config = record.config_as(ParallelConfig)
    policies = py_trees.common.ParallelPolicy
    policy: py_trees.common.ParallelPolicy.Base
    if config.policy == "all":
        policy = policies.SuccessOnAll(synchronise=config.synchronise)
    elif config.policy == "one":
        policy = policies.SuccessOnOne()
    else:
        chosen = [children[i] for i in config.selected or ()]
        policy = policies.SuccessOnSelected(chosen, synchronise=config.synchronise)
    built: Behaviour = _lean("composites", "Parallel")(
        record.name, policy=policy, children=children
    )
    return built


def _sequence_outcome(config: Any, children: list[Outcome]) -> Outcome:
    return Outcome(
        can_succeed=all(c.can_succeed for c in children),
        can_fail=any(c.can_fail for c in children),
    )


def _selector_outcome(config: Any, children: list[Outcome]) -> Outcome:
    return Outcome(
        can_succeed=any(c.can_succeed for c in children),
        can_fail=all(c.can_fail for c in children),
    )


def _parallel_outcome(config: Any, children: list[Outcome]) -> Outcome:
    return Outcome(
        can_succeed=any(c.can_succeed for c in children),
        can_fail=any(c.can_fail for c in children),
    )


def _fixed_name(title: str) -> Namer:
    return lambda config: title


for _kind, _config, _build, _outcome in (
    ("sequence", SequenceConfig, _composite("Sequence", SequenceConfig), _sequence_outcome),
    ("selector", SelectorConfig, _composite("Selector", SelectorConfig), _selector_outcome),
    ("parallel", ParallelConfig, _parallel, _parallel_outcome),
):
    register_kind(
        NodeKind(
            _kind,
            _config,
            "composite",
            _build,
            outcome=_outcome,
            default_name=_fixed_name(_kind.title()),
        )
    )


# --- decorators -------------------------------------------------------------------------------


def _decorator(name: str, convert: Callable[[str, Any], Any] | None = None) -> Build:
    """A builder of `py_trees.decorators.<name>` around the one child, given the config's own
    keys (beyond those of every decorator) as keyword arguments, each through
    `convert(key, value)` when given."""

    def build(record: NodeRecord, children: Children, ctx: BuildContext) -> Behaviour:
        config = record.config
        # a pydantic model's field values are its __dict__ (`model_fields` is a slow accessor)
        common = DecoratorConfig.__pydantic_fields__
        values = vars(config)
        own = {key: values[key] for key in type(config).__pydantic_fields__ if key not in common}
        if convert is not None:
            own = {key: convert(key, value) for key, value in own.items()}
        built: Behaviour = _lean("decorators", name)(name=record.name, child=children[0], **own)
        return built

    return build


def _same(config: Any, children: list[Outcome]) -> Outcome:
    return children[0] if children else Outcome()


def _fixed(succeed: bool | None, fail: bool | None) -> Rule:
    """An outcome rule: True/False force a possibility, None keeps the child's."""

    def outcome(config: Any, children: list[Outcome]) -> Outcome:
        child = children[0] if children else Outcome()
        return Outcome(
            can_succeed=child.can_succeed if succeed is None else succeed,
            can_fail=child.can_fail if fail is None else fail,
        )

    return outcome


def _inverted(config: Any, children: list[Outcome]) -> Outcome:
    child = children[0] if children else Outcome()
    return Outcome(can_succeed=child.can_fail, can_fail=child.can_succeed)


def _one_shot_policy(key: str, value: Any) -> Any:
    if key != "policy":
        return value
    import py_trees

    if value == "on_completion":
        return py_trees.common.OneShotPolicy.ON_COMPLETION
    return py_trees.common.OneShotPolicy.ON_SUCCESSFUL_COMPLETION


def _repeat_name(config: RepeatConfig) -> str:
    return "Repeat forever" if config.num_success < 0 else f"Repeat x{config.num_success}"


def _timeout_name(config: TimeoutConfig) -> str:
    return f"Timeout {config.duration:g}s"


def _register_decorator(
    name: str,
    config: type[DecoratorConfig],
    build: Build,
    outcome: Rule,
    default_name: Namer,
) -> None:
    register_kind(
        NodeKind(name, config, "decorator", build, outcome=outcome, default_name=default_name)
    )


# kind -> (config, builder, outcome rule, default name)
_DECORATORS: dict[str, tuple[type[DecoratorConfig], Build, Rule, Namer]] = {
    "retry": (RetryConfig, _decorator("Retry"), _same, lambda c: f"Retry x{c.num_failures}"),
    "timeout": (TimeoutConfig, _decorator("Timeout"), _fixed(None, True), _timeout_name),
    "repeat": (RepeatConfig, _decorator("Repeat"), _same, _repeat_name),
    "inverter": (InverterConfig, _decorator("Inverter"), _inverted, _fixed_name("Not")),
    "oneshot": (OneShotConfig, _decorator("OneShot", _one_shot_policy), _same, _fixed_name("Once")),
}
for _name, (_model, _builder, _rule, _title) in _DECORATORS.items():
    _register_decorator(_name, _model, _builder, _rule, _title)

# name -> (py_trees decorator class name, can succeed, can fail) with None = as the child
_CONVERTERS: dict[str, tuple[str, bool | None, bool | None]] = {
    "failure_is_success": ("FailureIsSuccess", True, False),
    "failure_is_running": ("FailureIsRunning", None, False),
    "success_is_failure": ("SuccessIsFailure", False, True),
    "success_is_running": ("SuccessIsRunning", False, None),
    "running_is_failure": ("RunningIsFailure", None, True),
    "running_is_success": ("RunningIsSuccess", True, None),
}
for _name, (_cls, _ok, _fail) in _CONVERTERS.items():
    _converter: type[StatusConverterConfig] = type(
        "".join(p.title() for p in _name.split("_")) + "Config",
        (StatusConverterConfig,),
        {
            "__doc__": f"{_name.replace('_', ' ').capitalize()} (py_trees {_cls}).",
            # where `child: Node` resolves, as for the configs of `model`
            "__module__": StatusConverterConfig.__module__,
        },
    )
    _register_decorator(
        _name,
        _converter,
        _decorator(_cls),
        _fixed(_ok, _fail),
        _fixed_name(_name.replace("_", " ").capitalize()),
    )


# --- subtree and behaviour --------------------------------------------------------------------


def _subtree_runner(config: SubtreeConfig) -> Any:
    """The subtree's `runner:` (None for none or the in-process one); a NodeProblem at the key
    for an unknown runner or option (checked with the analysis, so `validate` reports it)."""
    if config.runner is None:
        return None
    from jianmu_bt.sandbox.bound import named_runner

    try:
        return named_runner(config.runner)
    except ValueError as exc:
        raise NodeProblem(str(exc), ("runner",), code="tool-runner") from None


def _subtree_io(config: SubtreeConfig) -> NodeIO:
    runner = _subtree_runner(config)
    if runner is not None:
        runner.close()  # only checked here: the build makes the one the tree uses
    return NodeIO()


def _subtree(record: NodeRecord, children: Children, ctx: BuildContext) -> Behaviour:
    # A one-child Sequence: transparent to the outcome, and a box for the subtree in displays.
    built: Behaviour = _lean("composites", "Sequence")(record.name, memory=True, children=children)
    runner = _subtree_runner(record.config_as(SubtreeConfig))
    if runner is not None:
        # Every node inside that calls tools (tool steps, executors, agents' executors) and has
        # no runner of its own calls through this one; a tool bound to its own runner keeps it.
        for node in built.iterate():
            if hasattr(node, "runner") and node.runner is None:
                node.runner = runner
        ctx.owned_runners.append(runner)  # the tree closes it after each run
    return built


def _subtree_name(config: SubtreeConfig) -> str:
    if config.tree:
        return config.tree
    stem = (config.file or "subtree").replace("\\", "/").rsplit("/", 1)[-1]
    return stem.rsplit(".", 1)[0] or "subtree"


register_kind(
    NodeKind(
        "subtree",
        SubtreeConfig,
        "subtree",
        _subtree,
        io=_subtree_io,
        outcome=_same,
        default_name=_subtree_name,
    )
)


def _behaviour(record: NodeRecord, children: Children, ctx: BuildContext) -> Behaviour:
    config = record.config_as(BehaviourConfig)
    cls = load_behaviour_class(config.class_, [record.unit.base_dir])
    try:
        return cls(name=record.name, **config.args)
    except Exception as exc:
        raise NodeProblem(
            f"cannot build {cls.__name__}({', '.join(config.args)}): {type(exc).__name__}: {exc}",
            ("args",) if config.args else ("class",),
            code="build-error",
        ) from None


register_kind(
    NodeKind(
        "behaviour",
        BehaviourConfig,
        "behaviour",
        _behaviour,  # its class is imported and checked with its `args` (behaviour_args)
        default_name=lambda c: c.class_.rsplit(":", 1)[-1].rsplit(".", 1)[-1],
    )
)

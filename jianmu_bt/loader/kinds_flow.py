"""Control-flow node kinds: composites, decorators, status converters, subtree, behaviour."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import py_trees
from py_trees.behaviour import Behaviour

from jianmu_bt.loader.model import (
    BehaviourConfig,
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
from jianmu_bt.loader.registry import NodeIO, NodeKind, NodeProblem, Outcome, register_kind

if TYPE_CHECKING:
    from jianmu_bt.loader.build import BuildContext
    from jianmu_bt.loader.expand import NodeRecord

Children = list[Behaviour]


# --- composites -------------------------------------------------------------------------------


def _composite(
    cls: type[py_trees.composites.Sequence | py_trees.composites.Selector],
) -> Callable[[NodeRecord, Children, BuildContext], Behaviour]:
    def build(record: NodeRecord, children: Children, ctx: BuildContext) -> Behaviour:
        return cls(record.name, memory=record.config.memory, children=children)

    return build


def _parallel(record: NodeRecord, children: Children, ctx: BuildContext) -> Behaviour:
    config: ParallelConfig = record.config  # type: ignore[assignment]
    policies = py_trees.common.ParallelPolicy
    policy: py_trees.common.ParallelPolicy.Base
    if config.policy == "all":
        policy = policies.SuccessOnAll(synchronise=config.synchronise)
    elif config.policy == "one":
        policy = policies.SuccessOnOne()
    else:
        chosen = [children[i] for i in config.selected or ()]
        policy = policies.SuccessOnSelected(chosen, synchronise=config.synchronise)
    return py_trees.composites.Parallel(record.name, policy=policy, children=children)


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


def _fixed_name(title: str) -> Callable[[Any], str]:
    return lambda config: title


for _kind, _config, _build, _outcome in (
    ("sequence", SequenceConfig, _composite(py_trees.composites.Sequence), _sequence_outcome),
    ("selector", SelectorConfig, _composite(py_trees.composites.Selector), _selector_outcome),
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


def _decorator(
    cls: type[py_trees.decorators.Decorator], **fixed: Any
) -> Callable[[NodeRecord, Children, BuildContext], Behaviour]:
    def build(record: NodeRecord, children: Children, ctx: BuildContext) -> Behaviour:
        return cls(
            name=record.name, child=children[0], **{k: f(record.config) for k, f in fixed.items()}
        )

    return build


def _same(config: Any, children: list[Outcome]) -> Outcome:
    return children[0] if children else Outcome()


def _fixed(succeed: bool | None, fail: bool | None) -> Callable[[Any, list[Outcome]], Outcome]:
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


def _one_shot_policy(config: OneShotConfig) -> py_trees.common.OneShotPolicy:
    if config.policy == "on_completion":
        return py_trees.common.OneShotPolicy.ON_COMPLETION
    return py_trees.common.OneShotPolicy.ON_SUCCESSFUL_COMPLETION


register_kind(
    NodeKind(
        "retry",
        RetryConfig,
        "decorator",
        _decorator(py_trees.decorators.Retry, num_failures=lambda c: c.num_failures),
        outcome=_same,
        default_name=lambda c: f"Retry x{c.num_failures}",
    )
)
register_kind(
    NodeKind(
        "timeout",
        TimeoutConfig,
        "decorator",
        _decorator(py_trees.decorators.Timeout, duration=lambda c: c.duration),
        outcome=_fixed(None, True),
        default_name=lambda c: f"Timeout {c.duration:g}s",
    )
)
register_kind(
    NodeKind(
        "repeat",
        RepeatConfig,
        "decorator",
        _decorator(py_trees.decorators.Repeat, num_success=lambda c: c.num_success),
        outcome=_same,
        default_name=lambda c: (
            "Repeat forever" if c.num_success < 0 else f"Repeat x{c.num_success}"
        ),
    )
)
register_kind(
    NodeKind(
        "inverter",
        InverterConfig,
        "decorator",
        _decorator(py_trees.decorators.Inverter),
        outcome=_inverted,
        default_name=lambda c: "Not",
    )
)
register_kind(
    NodeKind(
        "oneshot",
        OneShotConfig,
        "decorator",
        _decorator(py_trees.decorators.OneShot, policy=_one_shot_policy),
        outcome=_same,
        default_name=lambda c: "Once",
    )
)

# name -> (py_trees class, can succeed, can fail) with None = as the child
_CONVERTERS: dict[str, tuple[type[py_trees.decorators.Decorator], bool | None, bool | None]] = {
    "failure_is_success": (py_trees.decorators.FailureIsSuccess, True, False),
    "failure_is_running": (py_trees.decorators.FailureIsRunning, None, False),
    "success_is_failure": (py_trees.decorators.SuccessIsFailure, False, True),
    "success_is_running": (py_trees.decorators.SuccessIsRunning, False, None),
    "running_is_failure": (py_trees.decorators.RunningIsFailure, None, True),
    "running_is_success": (py_trees.decorators.RunningIsSuccess, True, None),
}
for _name, (_cls, _ok, _fail) in _CONVERTERS.items():
    _config = type(
        "".join(p.title() for p in _name.split("_")) + "Config",
        (StatusConverterConfig,),
        {"__doc__": f"{_name.replace('_', ' ').capitalize()} (py_trees {_cls.__name__})."},
    )
    register_kind(
        NodeKind(
            _name,
            _config,
            "decorator",
            _decorator(_cls),
            outcome=_fixed(_ok, _fail),
            default_name=_fixed_name(_name.replace("_", " ").capitalize()),
        )
    )


# --- subtree and behaviour --------------------------------------------------------------------


def _subtree(record: NodeRecord, children: Children, ctx: BuildContext) -> Behaviour:
    # A one-child Sequence: transparent to the outcome, and a box for the subtree in displays.
    return py_trees.composites.Sequence(record.name, memory=True, children=children)


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
        outcome=_same,
        default_name=_subtree_name,
    )
)


def load_behaviour_class(spec: str) -> type[Behaviour]:
    """The py_trees Behaviour class at 'module:Class' (NodeProblem when it is not one)."""
    module_name, _, attr = spec.partition(":")
    try:
        value: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise NodeProblem(
            f"cannot import '{spec}': {type(exc).__name__}: {exc}", ("class",), code="import-error"
        ) from None
    for part in attr.split("."):
        if not hasattr(value, part):
            raise NodeProblem(
                f"'{module_name}' has no attribute '{part}'", ("class",), code="import-error"
            )
        value = getattr(value, part)
    if not (inspect.isclass(value) and issubclass(value, Behaviour)):
        raise NodeProblem(
            f"'{spec}' is not a py_trees Behaviour class (got {type(value).__name__})",
            ("class",),
            code="import-error",
        )
    return value


def _behaviour(record: NodeRecord, children: Children, ctx: BuildContext) -> Behaviour:
    config: BehaviourConfig = record.config  # type: ignore[assignment]
    cls = load_behaviour_class(config.class_)
    try:
        return cls(name=record.name, **config.args)
    except Exception as exc:
        raise NodeProblem(
            f"cannot build {cls.__name__}({', '.join(config.args)}): {type(exc).__name__}: {exc}",
            ("args",) if config.args else ("class",),
            code="build-error",
        ) from None


def _behaviour_io(config: BehaviourConfig) -> NodeIO:
    load_behaviour_class(config.class_)  # report a bad import path before anything is built
    return NodeIO()


register_kind(
    NodeKind(
        "behaviour",
        BehaviourConfig,
        "behaviour",
        _behaviour,
        io=_behaviour_io,
        default_name=lambda c: c.class_.rsplit(":", 1)[-1].rsplit(".", 1)[-1],
    )
)

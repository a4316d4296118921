"""The registry of node kinds: one entry per kind feeds validation, schema, checks and building.

A `NodeKind` ties a kind's name (the YAML key, e.g. `tool`) to its pydantic config model, the
function that builds its py_trees behaviour, the state keys it reads and writes (for the static
checks), what outcomes it can have (for the reachability check) and a display `category`. From
the registered kinds the registry builds the discriminated union of nodes and the file model,
so `register_kind` is all a new kind needs:

```python
register_kind(NodeKind("wait", WaitConfig, "action", build=build_wait))
```
The registry imports no kind: the kinds register themselves. The built-in ones live in
`kinds_flow` and `kinds_work`, imported (so registered) by `jianmu_bt.loader.kinds`, which the
loader's entry points import before anything asks the registry.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, create_model, model_validator
from pydantic_core import PydanticCustomError

from jianmu_bt.loader.diagnostics import quote_list
from jianmu_bt.loader.model import NodeConfig, TreeFileBase, TreeName, use_node_union
from jianmu_bt.loader.node_facts import EITHER, NodeIO, Outcome
from jianmu_bt.tools.references import did_you_mean

if TYPE_CHECKING:
    from py_trees.behaviour import Behaviour

    from jianmu_bt.loader.context import BuildContext
    from jianmu_bt.loader.records import NodeRecord

CATEGORIES = ("composite", "decorator", "action", "condition", "agent", "subtree", "behaviour")
"""Display categories (the DOT writer picks shapes by category)."""

INVALID_TAG = "__invalid_node__"


Builder = Callable[["NodeRecord", list["Behaviour"], "BuildContext"], Any]
"""`build(record, children, ctx)`: the py_trees behaviour of one node, its children built."""


def _no_io(config: Any) -> NodeIO:
    return NodeIO()


def _either(config: Any, children: list[Outcome]) -> Outcome:
    return EITHER


@dataclass(frozen=True)
class NodeKind:
    """One node kind: name, config model, display category, builder, state I/O and outcomes.

    - `build(record, children, ctx)` returns the py_trees behaviour (children already built);
    - `io(config)` lists the state keys it reads and writes (raise NodeProblem for bad config);
    - `outcome(config, child_outcomes)` says whether it can succeed and fail;
    - `default_name(config)` names a node the file leaves unnamed;
    - `description` (by default the config model's docstring) documents it in the JSON Schema.
    """

    name: str
    config: type[NodeConfig]
    category: str
    build: Builder
    io: Callable[[Any], NodeIO] = _no_io
    outcome: Callable[[Any, list[Outcome]], Outcome] = _either
    default_name: Callable[[Any], str] | None = None
    description: str | None = None

    def __post_init__(self) -> None:
        if self.description is None:
            object.__setattr__(self, "description", self.config.__doc__ or "")

    def display_name(self, config: Any) -> str:
        """The name of a node of this kind the file did not name."""
        if self.default_name is not None:
            return self.default_name(config)
        return self.name.replace("_", " ").title().replace(" ", "")


_kinds: dict[str, NodeKind] = {}
_categories: dict[str, str] = {}
NODE_KINDS: Mapping[str, str] = MappingProxyType(_categories)
"""Every registered kind -> its display category (a live read-only view)."""

_lock = threading.RLock()
_models: Models | None = None


def register_kind(kind: NodeKind, *, replace: bool = False) -> None:
    """Add a node kind (the models, schema and builder pick it up on their next use)."""
    global _models
    if kind.category not in CATEGORIES:
        raise ValueError(f"unknown category {kind.category!r}; use one of {', '.join(CATEGORIES)}")
    if not kind.name.isidentifier():
        raise ValueError(f"a node kind name is an identifier, got {kind.name!r}")
    with _lock:
        if kind.name in _kinds and not replace:
            raise ValueError(f"node kind {kind.name!r} is already registered")
        _kinds[kind.name] = kind
        _categories[kind.name] = kind.category
        _models = None


def get_kind(name: str) -> NodeKind | None:
    """The registered kind called `name`, or None."""
    return _kinds.get(name)


def node_kinds() -> dict[str, str]:
    """Every registered node kind -> its display category, in registration order."""
    return dict(_categories)


# --- models built from the registry -----------------------------------------------------------


@dataclass(frozen=True)
class Models:
    """The pydantic models built from the registered kinds (all of them, or some: `kinds`)."""

    node: Any
    wrappers: dict[str, type[BaseModel]]
    file: type[TreeFileBase]
    kinds: frozenset[str]


def unwrap(node: BaseModel) -> tuple[str, NodeConfig]:
    """`(kind, config)` of a validated node."""
    kind = type(node).__jianmu_kind__  # type: ignore[attr-defined]
    return kind, getattr(node, kind)


def models(uses: Iterable[Hashable] | None = None) -> Models:
    """The node union and the file model (built once, cached).

    Without `uses`, of every registered kind. With `uses` (the keys of a file's mappings: its
    node kinds among them), the process's first call builds them for the kinds in it alone, so
    a one-file command (`jianmu validate`) builds the few kinds its file has, not all; a later
    call whose kinds the cached models lack gets every registered kind from then on.
    """
    global _models
    with _lock:
        cached = _models
        if cached is not None and (
            len(cached.kinds) == len(_kinds)  # every kind (a registration clears the cache)
            or (uses is not None and cached.kinds.issuperset(k for k in uses if k in _kinds))
        ):
            return cached
        if cached is None and uses is not None:
            # `behaviour` too: a node the file model refuses becomes a placeholder of that kind
            # (`repair`), which the next round of validation must take.
            wanted = {*uses, "behaviour"}
            _models = _build_models({k: v for k, v in _kinds.items() if k in wanted})
        else:
            _models = _build_models(dict(_kinds))
        return _models


def _node_tag(value: Any) -> str:
    if isinstance(value, BaseModel):
        return getattr(type(value), "__jianmu_kind__", INVALID_TAG)
    if isinstance(value, dict) and len(value) == 1:
        key = next(iter(value))
        if key in _kinds:
            return key
    return INVALID_TAG


class InvalidNode(BaseModel):
    """Never valid: explains what is wrong with something that should be a node."""

    @model_validator(mode="before")
    @classmethod
    def _refuse(cls, value: Any) -> Any:
        raise _node_shape_error(value)


def _node_shape_error(value: Any) -> PydanticCustomError:
    kinds = list(_kinds)
    known = quote_list(kinds)
    if isinstance(value, str) and value in _kinds:
        return PydanticCustomError(
            "node_shape",
            "'{kind}' needs its configuration: write `{kind}: {...}` (a mapping of its keys)",
            {"kind": value},
        )
    if not isinstance(value, dict):
        got = "nothing (null)" if value is None else f"{type(value).__name__} {value!r}"
        return PydanticCustomError(
            "node_shape",
            "a node is a mapping with one key, its kind (one of {known}); got {got}",
            {"known": known, "got": got[:80]},
        )
    if not value:
        return PydanticCustomError(
            "node_shape",
            "an empty node: give it one key, its kind (one of {known})",
            {"known": known},
        )
    keys = [str(k) for k in value]
    found = [k for k in keys if k in _kinds]
    if len(found) > 1:
        return PydanticCustomError(
            "node_shape",
            "a node has one kind, found {found}: put each node in its own list item",
            {"found": " and ".join(f"'{k}'" for k in found), "at_key": found[1]},
        )
    if len(found) == 1:
        kind = found[0]
        others = [k for k in keys if k != kind]
        them = "it" if len(others) == 1 else "them"
        hint = (
            f"indent {them} under '{kind}:' (to configure it)"
            if value[kind] is None
            else f"move {them} inside '{kind}'"
        )
        return PydanticCustomError(
            "node_shape",
            "a node has exactly one key, its kind '{kind}'; {others} {verb}: {hint}",
            {
                "kind": kind,
                "others": ", ".join(f"'{k}'" for k in others),
                "verb": "is not a node kind" if len(others) == 1 else "are not node kinds",
                "hint": hint,
                "at_key": others[0],
            },
        )
    if len(keys) == 1:
        return PydanticCustomError(
            "unknown_kind",
            "unknown node kind '{kind}'{hint}; known kinds: {known}",
            {
                "kind": keys[0],
                "hint": did_you_mean(keys[0], kinds),
                "known": known,
                "at_key": keys[0],
            },
        )
    return PydanticCustomError(
        "node_shape",
        "a node is a mapping with one key, its kind (one of {known}); got keys {keys}",
        {"known": known, "keys": ", ".join(keys), "at_key": keys[0]},
    )


def _build_models(kinds: dict[str, NodeKind]) -> Models:
    wrappers: dict[str, type[BaseModel]] = {}
    for name, kind in kinds.items():
        title = "".join(part.title() for part in name.split("_")) + "Node"
        wrapper = create_model(
            title,
            # built inside the file model (with the union of now), or on first use alone
            __config__=ConfigDict(extra="forbid", title=f"{name} node", defer_build=True),
            __doc__=f"A `{name}` node ({kind.category}).",
            **{name: (kind.config, Field(description=kind.description or None))},  # type: ignore[call-overload]
        )
        wrapper.__jianmu_kind__ = name
        wrappers[name] = wrapper
    members = [Annotated[w, Tag(name)] for name, w in wrappers.items()]
    members.append(Annotated[InvalidNode, Tag(INVALID_TAG)])
    # Built at run time from the registered kinds: a value to pydantic, no type to mypy.
    node: Any = Annotated[Union[tuple(members)], Discriminator(_node_tag)]  # noqa: UP007
    # One schema generation, for the file model: the configs find `Node` in their module
    # (`use_node_union`), so they need no rebuild of their own (each would generate the whole
    # union again), and complete on their own if used alone. A config completed with an
    # earlier union is rebuilt first; if some config still cannot see `Node` (one declared in
    # another module), every config is rebuilt with it given explicitly.
    use_node_union(node)
    namespace = {"Node": node}
    configs: list[type[NodeConfig]] = []
    for kind in kinds.values():
        for cls in reversed(kind.config.__mro__):
            if isinstance(cls, type) and issubclass(cls, NodeConfig) and cls not in configs:
                configs.append(cls)
    for cls in configs:
        if cls.__pydantic_complete__ and (
            "children" in cls.model_fields or "child" in cls.model_fields
        ):
            cls.model_rebuild(force=True, _types_namespace=namespace)
    file_model = _file_model(node)
    if not file_model.__pydantic_complete__:
        for cls in configs:
            cls.model_rebuild(force=True, _types_namespace=namespace)
        file_model.model_rebuild(force=True, _types_namespace=namespace)
    return Models(node=node, wrappers=wrappers, file=file_model, kinds=frozenset(kinds))


def _file_model(node: Any) -> type[TreeFileBase]:
    return create_model(
        "TreeFile",
        __base__=TreeFileBase,
        trees=(
            dict[TreeName, node],
            Field(default_factory=dict, description="Named trees, for `subtree: {tree: ...}`."),
        ),
        root=(node | None, Field(None, description="The tree's root node.")),
    )

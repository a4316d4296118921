"""Leaner py_trees behaviours: no per-node objects kept that nothing reads.

`py_trees.behaviour.Behaviour.__init__` stores on every node `self.iterator = self.tick()` (a
generator of about 400 bytes, made again at every `stop()`, which py_trees never reads: it
ticks through `tick()` each time), a `qualified_name` string for displays, and a
`py_trees.logging.Logger` holding the node's name formatted as a prefix (about 160 bytes). In
a tree of thousands of nodes, or thousands of small runs at once, they are a large share of the
memory. A `LeanBehaviour` keeps no generator (`behaviour.iterator` still gives one over the
node's tick), makes `qualified_name` when it is read, and shares its logger with the nodes of
its name: one that logs exactly as py_trees' does (same levels and prefix), formatting the
prefix only for a message that is shown; its `blackboards` list is made when first used
(py_trees makes one for every node; most never attach a client). A `LeanLeaf` (our nodes' base)
also shares one empty tuple as `children`, where py_trees gives every leaf a list of its own,
and is built without making any of these only to drop them. Every one of these is an object the
garbage collector walks at each full pass, per node of every run. `lean(cls)` is a py_trees
class (a composite, a decorator) made lean.
"""

from __future__ import annotations

import functools
from typing import Any, TypeVar

import py_trees
from py_trees.common import BlackBoxLevel, Status
from py_trees.logging import Level, Logger

from jianmu_bt.runtime.node_ids import node_id

B = TypeVar("B", bound=type[py_trees.behaviour.Behaviour])


class _Iterator:
    """`Behaviour.iterator` that keeps nothing: each read is a new generator over `tick()`."""

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        return self if obj is None else obj.tick()

    def __set__(self, obj: Any, value: Any) -> None:
        return None  # the generator py_trees made (it never ran) is dropped here


class _QualifiedName:
    """`Behaviour.qualified_name` ("Class/name", a display convenience) made when read."""

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        return self if obj is None else f"{type(obj).__qualname__}/{obj.name}"

    def __set__(self, obj: Any, value: Any) -> None:
        return None  # py_trees' copy, made at __init__, is dropped here


class NodeLogger:
    """py_trees' per-node Logger, without a stored prefix (py_trees.logging's level applies).

    It holds only the node's name, as py_trees' Logger does from the node's `__init__`: the
    nodes of one name share one (`node_logger`), so a node keeps none of its own.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _shown(self) -> Logger:
        return Logger(self.name)

    def debug(self, msg: str) -> None:
        """As `py_trees.logging.Logger.debug`."""
        if py_trees.logging.level < Level.INFO:
            self._shown().debug(msg)

    def info(self, msg: str) -> None:
        """As `py_trees.logging.Logger.info`."""
        if py_trees.logging.level < Level.WARN:
            self._shown().info(msg)

    def warning(self, msg: str) -> None:
        """As `py_trees.logging.Logger.warning`."""
        if py_trees.logging.level < Level.ERROR:
            self._shown().warning(msg)

    def error(self, msg: str) -> None:
        """As `py_trees.logging.Logger.error`."""
        self._shown().error(msg)

    @property
    def prefix(self) -> str:
        """The node's name as py_trees' Logger formats it."""
        return self._shown().prefix


@functools.lru_cache(maxsize=4096)
def node_logger(name: str) -> NodeLogger:
    """The logger of the nodes named `name` (shared: it holds nothing but the name)."""
    return NodeLogger(name)


class _Blackboards:
    """`Behaviour.blackboards`, the node's attached py_trees clients: the list is made when first
    read (attaching a client reads it), not for every node (most attach none). Kept as a plain
    attribute: reading `__dict__` would make the instance's dict, the cost avoided here."""

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        made: list[Any] | None = getattr(obj, "_blackboard_list", None)
        if made is None:
            made = []
            obj._blackboard_list = made
        return made

    def __set__(self, obj: Any, value: Any) -> None:
        if value or getattr(obj, "_blackboard_list", None) is not None:
            obj._blackboard_list = value  # py_trees' initial [] is not kept


class _NoChildren:
    """`Behaviour.children` of a leaf: one shared empty tuple (py_trees gives each node a list)."""

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        return self if obj is None else ()

    def __set__(self, obj: Any, value: Any) -> None:
        if value:
            raise TypeError(f"{type(obj).__name__} is a leaf behaviour: it has no children")


class LeanBehaviour:
    """A mixin, before the py_trees class in the bases: no stored `iterator`, a shared `logger`,
    the `blackboards` list made only when used."""

    iterator = _Iterator()
    qualified_name = _QualifiedName()
    blackboards = _Blackboards()
    name: str  # set by py_trees' Behaviour.__init__

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # py_trees' Logger(name) replaced (setattr: the attribute keeps py_trees' declared type)
        setattr(self, "logger", node_logger(self.name))  # noqa: B010


@functools.cache
def lean(cls: B) -> B:
    """`cls` (a py_trees Behaviour class) as a LeanBehaviour: same name, same behaviour."""
    namespace = {"__qualname__": cls.__qualname__, "__doc__": cls.__doc__}
    made: B = type(cls.__name__, (LeanBehaviour, cls), namespace)  # type: ignore[assignment]
    return made


class LeanLeaf(LeanBehaviour):
    """A LeanBehaviour that never has children: `children` is a shared empty tuple.

    Its `__init__` sets what py_trees' `Behaviour.__init__` sets and the descriptors above do not
    make on demand, without calling it: that one would make a generator, a formatted name, a
    logger and a list, only for each to be dropped (a test holds the two to the same
    attributes). (`id` is drawn here all the same, py_trees' `add_child` reads it: a version-4
    UUID as py_trees makes, from `node_id`, which is quicker.)
    """

    children = _NoChildren()
    #: Whether py_trees' `Behaviour` comes right after LeanBehaviour in the class's bases (our
    #: nodes): else another class between them may need its `__init__`, and it runs as usual.
    _bare_init: bool = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        mro = cls.__mro__
        cls._bare_init = mro[mro.index(LeanBehaviour) + 1] is py_trees.behaviour.Behaviour

    def __init__(self, name: str) -> None:
        if not self._bare_init:
            LeanBehaviour.__init__(self, name)
            return
        if not isinstance(name, str):
            raise TypeError(f"a behaviour name should be a string, but you passed in {type(name)}")
        self.id = node_id()
        self.name = name
        self.status = Status.INVALID
        self.parent: py_trees.behaviour.Behaviour | None = None
        self.feedback_message = ""
        self.blackbox_level = BlackBoxLevel.NOT_A_BLACKBOX
        setattr(self, "logger", node_logger(name))  # noqa: B010 - see LeanBehaviour

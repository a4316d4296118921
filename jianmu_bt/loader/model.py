"""The tree file format as pydantic models: the file, its state fields, tool entries, node configs
(the agent kinds' are in `model_agents`).

Every model refuses unknown keys (`extra="forbid"`). A node is a one-key mapping `{kind: config}`;
the configs are registered with their kinds in `jianmu_bt.loader.registry`, which builds the
discriminated union of nodes and the file model from them (so a newly registered kind is
validated, documented in the JSON Schema, checked and built like the built-in ones)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    model_validator,
)
from pydantic_core import PydanticCustomError

from jianmu_bt.guard import GuardConfig
from jianmu_bt.llm import LLMConfig
from jianmu_bt.llm.limits import UsageLimits
from jianmu_bt.loader.model_agent_tool import AgentToolEntry
from jianmu_bt.loader.model_external_tool import ExternalToolEntry
from jianmu_bt.mcp.config import MCPServerConfig

if TYPE_CHECKING:
    # The node union is built by the registry from the registered kinds and set here by
    # `use_node_union`, where these models (whose `children`/`child` refer to it) find it.
    Node = Any


def use_node_union(node: Any) -> None:
    """Make `node` (the registry's union of the registered kinds) what `Node` means here."""
    globals()["Node"] = node


StateKey = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
"""A state field name: a Python-style identifier (templates and conditions refer to it)."""

TreeName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_-]*$")]
NodeId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]+$")]
Text = Annotated[str, StringConstraints(min_length=1)]

StateType = Literal["string", "integer", "number", "boolean", "list", "dict", "any"]
ReducerName = Literal["replace", "append", "add", "merge"]


class StateField(BaseModel):
    """One field of the run's state. `state: {total: integer}` is short for `{type: integer}`.

    A field without `default` starts empty (null). `input: true` says the value comes from the
    run's inputs (`Tree.run(inputs)`, `jianmu run --set key=value`), so reading it is fine even
    though no node writes it.
    """

    model_config = ConfigDict(extra="forbid")

    type: StateType = Field("any", description="The value's type.")
    default: Any = Field(None, description="The starting value (omit: null).")
    reducer: ReducerName | None = Field(
        None, description="How a write combines with the current value (default: replace)."
    )
    description: str | None = Field(None, description="What the field holds.")
    input: bool = Field(False, description="The value is given as a run input.")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"type": value}
        return value

    @property
    def has_default(self) -> bool:
        """Whether the file gave a `default` (even null)."""
        return "default" in self.model_fields_set


# --- tools ------------------------------------------------------------------------------------


class BuiltinToolEntry(BaseModel):
    """A built-in tool with constructor options: `{builtin: read_file, options: {workspace: .}}`."""

    model_config = ConfigDict(extra="forbid")

    builtin: Text = Field(description="A built-in tool name or alias.")
    options: dict[str, Any] = Field(default_factory=dict, description="Constructor options.")
    runner: str | dict[str, Any] | None = Field(None, description="Where calls run (ray, local).")


class PythonToolEntry(BaseModel):
    """A Python tool by import path, with arguments for a factory: `{python: "pkg.mod:make"}`."""

    model_config = ConfigDict(extra="forbid")

    python: Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")] = Field(
        description="'module:attr' of a Tool, a Tool class, or a factory returning tools."
    )
    args: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments.")
    runner: str | dict[str, Any] | None = Field(None, description="Where calls run (ray, local).")


class MCPToolEntry(BaseModel):
    """The tools of an MCP server: `{mcp: {command: mcp-server-time, prefix: time}}`."""

    model_config = ConfigDict(extra="forbid")

    mcp: MCPServerConfig


def _tool_entry_tag(value: Any) -> str:
    if isinstance(value, str):
        return "name"
    if isinstance(value, BaseModel):
        return {
            BuiltinToolEntry: "builtin",
            PythonToolEntry: "python",
            MCPToolEntry: "mcp",
            AgentToolEntry: "agent",
            ExternalToolEntry: "external",
        }.get(type(value), "invalid")
    if isinstance(value, dict):
        for tag in ("builtin", "python", "mcp", "agent", "external"):
            if tag in value:
                return tag
    return "invalid"


class InvalidToolEntry(BaseModel):
    """Never valid: routes a malformed `tools` entry to one clear error."""

    @model_validator(mode="before")
    @classmethod
    def _refuse(cls, value: Any) -> Any:
        raise PydanticCustomError(
            "tool_entry",
            "a tools entry is a tool name (calculator), 'module:attr' of a Python tool, "
            "{builtin: name, options: {...}}, {python: 'module:attr', args: {...}}, "
            "{mcp: {command: ..., args: [...]}}, {agent: {name: ..., description: ...}} or "
            "{external: {name: ..., description: ...}}; "
            "got {got}",
            {"got": _describe_value(value)},
        )


ToolEntry = Annotated[
    Annotated[Text, Tag("name")]
    | Annotated[BuiltinToolEntry, Tag("builtin")]
    | Annotated[PythonToolEntry, Tag("python")]
    | Annotated[MCPToolEntry, Tag("mcp")]
    | Annotated[AgentToolEntry, Tag("agent")]
    | Annotated[ExternalToolEntry, Tag("external")]
    | Annotated[InvalidToolEntry, Tag("invalid")],
    Discriminator(_tool_entry_tag),
]


def _describe_value(value: Any) -> str:
    if isinstance(value, dict):
        return f"a mapping with keys {', '.join(map(str, value)) or '(none)'}"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    return f"{type(value).__name__} {value!r}"


# --- nodes ------------------------------------------------------------------------------------


class NodeConfig(BaseModel):
    """Keys every node kind accepts."""

    # Built on first use (every subclass too): inside the file model (`registry.models`), or on
    # its own when an error's path runs through it (`schema_errors`). Built at import, a composite
    # fails (the `Node` union does not exist yet) and a leaf is built twice, alone and in the file.
    model_config = ConfigDict(extra="forbid", defer_build=True)

    name: Text | None = Field(None, description="Display name (default: derived, unique).")
    id: NodeId | None = Field(
        None, description="A stable id for traces and DOT (default: the node's path)."
    )


class CompositeConfig(NodeConfig):
    """A node with an ordered list of children."""

    children: list[Node] = Field(min_length=1, description="The child nodes, in order.")


class SequenceConfig(CompositeConfig):
    """Runs children in order; fails at the first failure, succeeds when all succeed."""

    memory: bool = Field(True, description="Resume at the running child instead of restarting.")


class SelectorConfig(CompositeConfig):
    """Tries children in order; succeeds at the first success, fails when all fail."""

    memory: bool = Field(True, description="Resume at the running child instead of restarting.")


class ParallelConfig(CompositeConfig):
    """Ticks all children together; `policy` says when it succeeds; any child's failure fails it."""

    policy: Literal["all", "one", "selected"] = Field(
        "all", description="Succeed when all / one / the `selected` children succeed."
    )
    synchronise: bool = Field(True, description="Do not re-tick children that already succeeded.")
    selected: list[Annotated[int, Field(ge=0)]] | None = Field(
        None, description="Indexes of the children that must succeed (policy: selected)."
    )

    @model_validator(mode="after")
    def _selected(self) -> ParallelConfig:
        if (self.policy == "selected") != (self.selected is not None):
            raise ValueError(
                "`selected` (child indexes) goes with `policy: selected`, and only then"
            )
        for index in self.selected or ():
            if index >= len(self.children):
                raise ValueError(f"`selected` index {index} is past the last child")
        return self


class DecoratorConfig(NodeConfig):
    """A node that wraps one child and changes its outcome."""

    child: Node = Field(description="The decorated node.")


class RetryConfig(DecoratorConfig):
    """Re-runs a failing child, up to `num_failures` failures in total."""

    num_failures: int = Field(3, ge=1, description="Failures allowed before failing.")


class TimeoutConfig(DecoratorConfig):
    """Fails the child when it runs longer than `duration` seconds."""

    duration: float = Field(gt=0, description="Seconds.")


class RepeatConfig(DecoratorConfig):
    """Repeats a succeeding child `num_success` times (-1: forever); a failure fails."""

    num_success: int = Field(ge=-1, description="Successes needed (-1: repeat forever).")


class OneShotConfig(DecoratorConfig):
    """Runs the child to completion once; afterwards returns that outcome without ticking it."""

    policy: Literal["on_completion", "on_successful_completion"] = Field(
        "on_successful_completion", description="Which outcome makes the shot final."
    )


class InverterConfig(DecoratorConfig):
    """Swaps SUCCESS and FAILURE."""


class StatusConverterConfig(DecoratorConfig):
    """Maps one status of the child to another (see the kind's name)."""


class ToolStepConfig(NodeConfig):
    """One tool call as an explicit step: arguments from state, output to state."""

    tool: Text = Field(description="The tool's name (a built-in, a file tool or a Python tool).")
    arguments: Any = Field(
        None, description="The arguments; strings may hold {key} references to state."
    )
    input_key: StateKey | None = Field(None, description="Take the arguments from this field.")
    output: StateKey | None = Field(None, description="Write the tool's output to this field.")
    max_retries: int = Field(0, ge=0, description="Retries after a failed call.")
    retry_backoff: float = Field(0.5, ge=0, description="Seconds before the first retry.")
    timeout: float | None = Field(None, gt=0, description="Seconds the whole step may take.")
    call_timeout: float | None = Field(None, gt=0, description="Seconds one call may take.")

    @model_validator(mode="after")
    def _one_input(self) -> ToolStepConfig:
        if self.arguments is not None and self.input_key is not None:
            raise ValueError("give either `arguments` or `input_key`, not both")
        return self


ExecutionMode = Literal["auto", "serial", "parallel"]


class ExecutorConfig(NodeConfig):
    """Runs the tool calls an LLM node wrote to `actions`, under the guard."""

    tools: list[Text] | None = Field(None, description="The tools it may run (default: all).")
    actions_key: StateKey = Field("actions", description="Where the calls are read from.")
    messages_key: StateKey = Field("messages", description="Where tool messages are appended.")
    execution_mode: ExecutionMode = Field("auto", description="auto, serial or parallel.")
    max_concurrency: int = Field(1000, ge=1, description="Calls run at once in parallel mode.")
    max_retries: int = Field(0, ge=0, description="Retries after a failed call.")
    call_timeout: float | None = Field(None, gt=0, description="Seconds one call may take.")
    timeout: float | None = Field(None, gt=0, description="Seconds the whole batch may take.")


class ConditionConfig(NodeConfig):
    """SUCCESS when a safe expression over state is true, FAILURE otherwise."""

    check: Text = Field(description="An expression over state fields, e.g. 'total > 10'.")
    # The parsed expression, kept by the kind for this node's io, outcome and build (one
    # parse per node, and nothing held once the load is over). A slot, not a pydantic private
    # attribute: those make every validated instance set up a private dict, about a tenth of
    # a condition's validation. Copies and pickles leave it out (the kind parses again).
    __slots__ = ("_expression",)


class SetConfig(NodeConfig):
    """Writes values (literals or {key} templates) to state; reducers apply."""

    values: dict[StateKey, Any] = Field(min_length=1, description="field -> value or template.")


class SubtreeConfig(NodeConfig):
    """Another file's tree, or a named tree of `trees:`, with state keys renamed by `remap`."""

    file: Text | None = Field(None, description="A tree file, relative to this file.")
    tree: TreeName | None = Field(None, description="A named tree (of `file`, or of this file).")
    remap: dict[StateKey, StateKey] = Field(
        default_factory=dict, description="inner key -> outer key, for every key the subtree uses."
    )
    runner: str | dict[str, Any] | None = Field(
        None,
        description="Where the tool calls of the subtree's nodes run (ray, local, docker), unless "
        "a tool has a runner of its own.",
    )

    @model_validator(mode="after")
    def _target(self) -> SubtreeConfig:
        if self.file is None and self.tree is None:
            raise ValueError("a subtree needs `file` (another tree file) or `tree` (a named tree)")
        return self


class BehaviourConfig(NodeConfig):
    """Any py_trees Behaviour class by import path, built with `args` (and `name`)."""

    class_: Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")] = Field(
        alias="class", description="'module:Class' of a py_trees Behaviour."
    )
    args: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments.")


class TreeFileBase(BaseModel):
    """The keys of a tree file other than its nodes (`trees`, `root` are added by the registry)."""

    model_config = ConfigDict(extra="forbid", title="jianmu_bt tree file")

    version: Literal[1] = Field(1, description="The format version.")
    name: Text | None = Field(None, description="The tree's name (default: the file's name).")
    description: str | None = Field(None, description="What the tree does.")
    state: dict[StateKey, StateField] = Field(
        default_factory=dict, description="The run's state fields (besides the built-in ones)."
    )
    tools: list[ToolEntry] = Field(default_factory=list, description="Tools of this file.")
    tool_options: dict[str, Any] = Field(
        default_factory=dict, description="Options for built-in tools, e.g. {workspace: .}."
    )
    llm: LLMConfig | None = Field(None, description="The LLM provider of the tree.")
    guard: GuardConfig | None = Field(None, description="The guard of the tree.")
    limits: UsageLimits | None = Field(None, description="Usage limits of the whole run.")

    if TYPE_CHECKING:
        # The registry's file model adds these, typed by the union of the registered kinds.
        trees: dict[str, Node]
        root: Node | None

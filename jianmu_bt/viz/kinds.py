"""What a tree node is, for drawing: its kind, a Graphviz shape and a one-line detail.

One table decides the look of every node kind, so the DOT writer, the text view and the docs
agree:

| kind | recognised by | shape | detail |
|---|---|---|---|
| sequence | `py_trees.composites.Sequence` | box | "no memory" when memory is off |
| selector | `py_trees.composites.Selector` | octagon | "no memory" when memory is off |
| parallel | `py_trees.composites.Parallel` | parallelogram | the success policy |
| agent | the Sequence `react_agent` builds (see `is_agent_root`) | box | |
| agent loop | `jianmu_bt.nodes.AgentLoop` | invhouse | "max N iterations" |
| decorator | any other `py_trees.decorators.Decorator` | invtrapezium | retry/timeout/repeat... |
| tool | `jianmu_bt.nodes.ToolNode` | component | the tool's name |
| executor | `jianmu_bt.nodes.ToolExecutor` | box3d | the tools it may run |
| llm | `jianmu_bt.nodes.AgentLLMNode` | hexagon | the tools it is offered |
| message | `jianmu_bt.nodes.AddMessage` | note | the role |
| condition | `jianmu_bt.nodes.condition.Condition` | diamond | the expression |
| set | `jianmu_bt.nodes.set_values.SetValues` | note | the keys it writes |
| ask | `jianmu_bt.nodes.ask.Ask` | tab | the answer's choices or type, and its field |
| subtree | a YAML `subtree` node (its loader NodeInfo says so) | folder | the file or tree |
| resource | a YAML `mcp_resource` node (its loader NodeInfo says so) | cylinder | the URI |
| behaviour | anything else | ellipse | the Python class |

Nodes built by the YAML loader carry a `jianmu` attribute (a NodeInfo: kind, detail, ...); it
is read by attribute name only, so this module does not depend on the loader above it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import py_trees
from py_trees import composites, decorators

from jianmu_bt.nodes import AddMessage, AgentLLMNode, AgentLoop, ToolExecutor, ToolNode
from jianmu_bt.nodes.ask import Ask
from jianmu_bt.nodes.condition import Condition
from jianmu_bt.nodes.set_values import SetValues

#: Longest detail text drawn under a node's name; longer ones end in "...".
DETAIL_CHARS = 48

SHAPES: dict[str, str] = {
    "sequence": "box",
    "selector": "octagon",
    "parallel": "parallelogram",
    "agent": "box",
    "agent loop": "invhouse",
    "decorator": "invtrapezium",
    "tool": "component",
    "executor": "box3d",
    "llm": "hexagon",
    "message": "note",
    "condition": "diamond",
    "set": "note",
    "ask": "tab",
    "subtree": "folder",
    "resource": "cylinder",
    "behaviour": "ellipse",
}


@dataclass(frozen=True, slots=True)
class NodeLook:
    """How one node is drawn: its kind (a key of SHAPES), the shape, and a short detail."""

    kind: str
    shape: str
    detail: str = ""

    @property
    def caption(self) -> str:
        """The second line of a node's label: the kind, then the detail when there is one."""
        return f"{self.kind}: {self.detail}" if self.detail else self.kind


def shorten(text: str, limit: int = DETAIL_CHARS) -> str:
    """`text` on one line, cut to `limit` characters with "..." when it is longer."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def _names(items: Iterable[str], limit: int = 3) -> str:
    names = list(items)
    shown = ", ".join(names[:limit])
    return shown + (f" +{len(names) - limit}" if len(names) > limit else "")


def _decorator_detail(node: decorators.Decorator) -> str:
    kind = type(node).__name__
    if isinstance(node, decorators.Retry):
        return f"retry x{node.num_failures}"
    if isinstance(node, decorators.Timeout):
        return f"timeout {node.duration:g}s"
    if isinstance(node, decorators.Repeat):
        return f"repeat x{node.num_success}"
    if isinstance(node, decorators.OneShot):
        return f"oneshot ({node.policy.name.lower()})"
    if isinstance(node, decorators.Inverter):
        return "inverter"
    # The status converters read well as their own names: FailureIsSuccess -> failure is success.
    words = [c if c.islower() else " " + c.lower() for c in kind]
    return "".join(words).strip()


def _parallel_detail(node: composites.Parallel) -> str:
    policy = type(node.policy).__name__
    readable = {
        "SuccessOnAll": "success on all",
        "SuccessOnOne": "success on one",
        "SuccessOnSelected": "success on selected",
    }.get(policy, policy)
    if getattr(node.policy, "synchronise", False):
        readable += ", synchronised"
    return readable


def _answer_detail(node: Ask) -> str:
    choices = node.schema.get("enum")
    answer = " / ".join(map(str, choices)) if choices else str(node.schema.get("type", "any"))
    return f"{answer} -> {node.output_key}" if node.output_key else answer


def describe_node(node: py_trees.behaviour.Behaviour) -> NodeLook:
    """The kind, shape and detail of `node` (see the module's table)."""
    look = _look(node)
    return NodeLook(look.kind, look.shape, shorten(look.detail) if look.detail else "")


def _look(node: py_trees.behaviour.Behaviour) -> NodeLook:
    if isinstance(node, ToolNode):
        return NodeLook("tool", SHAPES["tool"], node.tool.name)
    if isinstance(node, ToolExecutor):
        return NodeLook("executor", SHAPES["executor"], _names(node.toolset.names()) or "no tools")
    if isinstance(node, AgentLLMNode):
        tools = node.toolset.names()
        return NodeLook("llm", SHAPES["llm"], f"tools {_names(tools)}" if tools else "")
    if isinstance(node, AddMessage):
        return NodeLook("message", SHAPES["message"], f"{node.role} -> {node.messages_key}")
    if isinstance(node, AgentLoop):
        return NodeLook("agent loop", SHAPES["agent loop"], f"max {node.max_iterations} iterations")
    if isinstance(node, composites.Parallel):
        return NodeLook("parallel", SHAPES["parallel"], _parallel_detail(node))
    if isinstance(node, Condition):
        return NodeLook("condition", SHAPES["condition"], node.expression.text)
    if isinstance(node, SetValues):
        return NodeLook("set", SHAPES["set"], _names(node.values))
    if isinstance(node, Ask):
        return NodeLook("ask", SHAPES["ask"], _answer_detail(node))
    if isinstance(node, composites.Sequence) and is_agent_root(node):
        return NodeLook("agent", SHAPES["agent"])
    info = getattr(node, "jianmu", None)
    loaded_as = getattr(info, "kind", None)
    if loaded_as == "subtree":
        return NodeLook("subtree", SHAPES["subtree"], str(getattr(info, "detail", "")))
    if loaded_as == "mcp_resource":  # its class is in the MCP layer, above this one
        return NodeLook("resource", SHAPES["resource"], str(getattr(info, "detail", "")))
    if isinstance(node, composites.Sequence):
        return NodeLook("sequence", SHAPES["sequence"], "" if node.memory else "no memory")
    if isinstance(node, composites.Selector):
        return NodeLook("selector", SHAPES["selector"], "" if node.memory else "no memory")
    if isinstance(node, decorators.Decorator):
        return NodeLook("decorator", SHAPES["decorator"], _decorator_detail(node))
    return NodeLook("behaviour", SHAPES["behaviour"], type(node).__name__)


def is_agent_root(node: py_trees.behaviour.Behaviour) -> bool:
    """True for the subtree `react_agent` (or the YAML `agent` node) builds.

    That is a Sequence whose children are AddMessage nodes and one AgentLoop, or an AgentLoop
    standing on its own (not inside such a Sequence).
    """
    if isinstance(node, AgentLoop):
        return not (node.parent is not None and is_agent_root(node.parent))
    if not isinstance(node, composites.Sequence) or not node.children:
        return False
    loops = [child for child in node.children if isinstance(child, AgentLoop)]
    others = [c for c in node.children if not isinstance(c, (AgentLoop, AddMessage))]
    return len(loops) == 1 and not others


def agent_loop_of(node: py_trees.behaviour.Behaviour) -> AgentLoop | None:
    """The AgentLoop of an agent root (itself, or its Sequence's loop child)."""
    if isinstance(node, AgentLoop):
        return node
    for child in node.children:
        if isinstance(child, AgentLoop):
            return child
    return None

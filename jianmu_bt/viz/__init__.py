"""Pictures of trees: our DOT writer, Graphviz rendering, statuses from traces, a text view.

- `tree_to_dot(tree, statuses=None)`: DOT text with synthetic ids, readable labels, shapes per
  node kind, agent subtrees as clusters, optional fill colours by status.
- `render_dot` / `write_graph`: SVG, PNG or PDF through Graphviz's `dot` (a clear
  `GraphvizNotFoundError` when it is not installed).
- `load_trace` / `statuses_for_tree`: the final statuses of a run's JSONL trace, mapped onto a
  tree, to colour a drawing after the run.
- `status_lines`: the statuses as indented plain text (the `jianmu run --watch` view).

See docs/dot.md.
"""

from jianmu_bt.viz.dot import (
    STATUS_COLOURS,
    as_status,
    quote,
    synthetic_ids,
    tree_to_dot,
    tree_to_pydot,
    walk,
)
from jianmu_bt.viz.kinds import SHAPES, NodeLook, describe_node, is_agent_root
from jianmu_bt.viz.render import (
    GraphvizNotFoundError,
    RenderError,
    find_dot,
    render_dot,
    write_graph,
)
from jianmu_bt.viz.text import status_lines
from jianmu_bt.viz.trace_status import (
    TREE_NODES_EVENT,
    TraceFormatError,
    last_statuses,
    load_trace,
    statuses_for_tree,
    tree_nodes_data,
)

__all__ = [
    "SHAPES",
    "STATUS_COLOURS",
    "TREE_NODES_EVENT",
    "GraphvizNotFoundError",
    "NodeLook",
    "RenderError",
    "TraceFormatError",
    "as_status",
    "describe_node",
    "find_dot",
    "is_agent_root",
    "last_statuses",
    "load_trace",
    "quote",
    "render_dot",
    "status_lines",
    "statuses_for_tree",
    "synthetic_ids",
    "tree_nodes_data",
    "tree_to_dot",
    "tree_to_pydot",
    "walk",
    "write_graph",
]

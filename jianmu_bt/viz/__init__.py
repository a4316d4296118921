"""Pictures of trees: our DOT writer, Graphviz rendering, statuses from traces, a text view.

- `tree_to_dot(tree, statuses=None)`: DOT text with synthetic ids, readable labels, shapes per
  node kind, agent subtrees as clusters, optional fill colours by status.
- `render_dot` / `write_graph`: SVG, PNG or PDF through Graphviz's `dot` (a clear
  `GraphvizNotFoundError` when it is not installed).
- `load_trace` / `statuses_for_tree`: the final statuses of a run's JSONL trace, mapped onto a
  tree, to colour a drawing after the run.
- `status_lines`: the statuses as indented plain text (the `jianmu run --watch` view).

See docs/dot.md.

Each name is imported from its module on first use (`jianmu_bt._lazy`): the text view of
`jianmu run --watch` and the trace statuses do not load the DOT writer or the renderer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jianmu_bt._lazy import lazy_exports

if TYPE_CHECKING:  # what type checkers and IDEs see
    from jianmu_bt.viz.dot import (
        STATUS_COLOURS as STATUS_COLOURS,
        quote as quote,
        synthetic_ids as synthetic_ids,
        tree_to_dot as tree_to_dot,
        tree_to_pydot as tree_to_pydot,
    )
    from jianmu_bt.viz.kinds import (
        SHAPES as SHAPES,
        NodeLook as NodeLook,
        describe_node as describe_node,
        is_agent_root as is_agent_root,
    )
    from jianmu_bt.viz.render import (
        GraphvizNotFoundError as GraphvizNotFoundError,
        RenderError as RenderError,
        find_dot as find_dot,
        render_dot as render_dot,
        write_graph as write_graph,
    )
    from jianmu_bt.viz.text import status_lines as status_lines
    from jianmu_bt.viz.trace_status import (
        TREE_NODES_EVENT as TREE_NODES_EVENT,
        TraceFormatError as TraceFormatError,
        last_statuses as last_statuses,
        load_trace as load_trace,
        statuses_for_tree as statuses_for_tree,
        tree_nodes_data as tree_nodes_data,
    )
    from jianmu_bt.viz.traversal import as_status as as_status, walk as walk


__getattr__, __dir__ = lazy_exports(__name__, globals())

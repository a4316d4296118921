"""A tree's node statuses as plain text lines, for terminals (including dumb ones) and logs.

```
[+] Main (sequence)
  [+] SumStep (tool: calculator)
  [*] Solver (sequence)
    [ ] Solver.goal (message: user -> messages)
```
Markers are ASCII so the view works anywhere: `[+]` SUCCESS, `[x]` FAILURE, `[*]` RUNNING,
`[ ]` not run (INVALID). A failed node shows its reason after `--`.
"""

from __future__ import annotations

from collections.abc import Iterator

import py_trees
from py_trees.common import Status

from jianmu_bt.viz.kinds import describe_node, shorten
from jianmu_bt.viz.traversal import StatusMap, as_status

MARKERS: dict[Status, str] = {
    Status.SUCCESS: "[+]",
    Status.FAILURE: "[x]",
    Status.RUNNING: "[*]",
    Status.INVALID: "[ ]",
}
#: Longest failure reason shown on a line.
REASON_CHARS = 80


def _with_depth(
    root: py_trees.behaviour.Behaviour,
) -> Iterator[tuple[int, py_trees.behaviour.Behaviour]]:
    stack = [(0, root)]
    while stack:
        depth, node = stack.pop()
        yield depth, node
        stack.extend((depth + 1, child) for child in reversed(node.children))


def status_lines(
    root: py_trees.behaviour.Behaviour, statuses: StatusMap | None = None, *, indent: int = 2
) -> list[str]:
    """One line per node in pre-order: marker, name and kind, indented by depth.

    `statuses` ({str(node.id): Status}) defaults to each node's current `status`.
    """
    lines = []
    for depth, node in _with_depth(root):
        if statuses is None:
            status = node.status
        else:
            status = as_status(statuses.get(str(node.id))) or Status.INVALID
        caption = describe_node(node).caption
        line = f"{' ' * (indent * depth)}{MARKERS[status]} {node.name} ({caption})"
        if status == Status.FAILURE and node.feedback_message:
            line += f" -- {shorten(node.feedback_message, REASON_CHARS)}"
        lines.append(line)
    return lines

"""Load a YAML tree and tick it yourself, one tick at a time, watching the statuses change.

`tree.tick()` runs one tick from ordinary synchronous code; async work (tool calls, LLM turns)
keeps running in the tree's background loop between ticks. Between two ticks you may read the
state, draw the tree, or decide to stop.

Run: python examples/tick_step_by_step.py
"""

import time
from pathlib import Path

from py_trees.common import Status

from jianmu_bt.loader import load_tree
from jianmu_bt.viz import status_lines

TREE = Path(__file__).resolve().parent.parent / "trees" / "quickstart.yaml"


def main() -> None:
    with load_tree(TREE) as tree:
        previous: list[str] = []
        for tick in range(1, 500):
            status = tree.tick()
            lines = status_lines(tree.root)
            if lines != previous:  # print only the ticks that changed something
                print(f"-- tick {tick}: root is {status.value}")
                print("\n".join(lines))
                previous = lines
            if status in (Status.SUCCESS, Status.FAILURE):
                break
            time.sleep(0.005)  # give the running tool or LLM call a moment
        print(f"total = {tree.state.get('total')}, answer = {tree.state.get('answer')!r}")


if __name__ == "__main__":
    main()

"""A durable run: pause on a call the guard holds for approval, then resume it in a new tree.

The run is recorded in a run store (an SQLite file in a temporary folder). `hold="pause"` makes
the held `deploy` call pause the run instead of waiting in this process; the result says
"paused" and the journal lists the held call. A new `load_tree` of the same YAML, as a new
process would make, resumes the run with the reviewer's approval: `build` finished before the
pause, so its result comes from the journal and the tool does not run a second time.

Run: python examples/durable_run.py
"""

import tempfile
from pathlib import Path

from jianmu_bt import tool
from jianmu_bt.loader import load_tree
from jianmu_bt.store import SQLiteStore

EFFECTS: list[str] = []  # every side effect the tools had, in order


@tool(effect_tags=["build"])
def build(version: str) -> str:
    """Build a release (a side effect: not safe to run twice)."""
    EFFECTS.append(f"build {version}")
    return f"built {version}"


@tool(effect_tags=["deploy"])
def deploy(artifact: str) -> str:
    """Deploy a build (held by the guard until a reviewer approves)."""
    EFFECTS.append(f"deploy {artifact}")
    return f"deployed {artifact}"


TREE = """
version: 1
name: release
state:
  version: {type: string, input: true}
  artifact: {type: string}
  outcome: {type: string}
guard:
  approve: [deploy]
root:
  sequence:
    name: Release
    children:
      - tool: {name: Build, tool: build, arguments: {version: "{version}"}, output: artifact}
      - tool: {name: Deploy, tool: deploy, arguments: {artifact: "{artifact}"}, output: outcome}
"""


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "runs.db")

        with load_tree(TREE, tools=[build, deploy]) as tree:
            paused = tree.run({"version": "1.4"}, store=store, run_id="release-1", hold="pause")
        print(f"run {paused.run_id}: {paused.run_status}")
        (held,) = [entry for entry in store.journal("release-1") if entry.status == "held"]
        print(f"held: {held.call_id} {held.tool}({held.arguments})")
        print(f"effects so far: {EFFECTS}")

        # Later, possibly in another process: the same tree, the same store, a decision.
        with load_tree(TREE, tools=[build, deploy]) as again:
            done = again.resume("release-1", store=store, approve=[held.call_id])
        print(f"run {done.run_id}: {done.run_status}, outcome: {done.state['outcome']}")
        print(f"effects: {EFFECTS}")
        print(f"build ran {EFFECTS.count('build 1.4')} time(s)")
        for entry in store.journal("release-1"):
            print(f"  {entry.key:<8} {entry.tool:<7} {entry.status}")
        store.close()


if __name__ == "__main__":
    main()

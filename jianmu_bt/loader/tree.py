"""Tree: a loaded YAML tree — its py_trees root, state, runner, tools, and its findings.

```python
tree = load_tree("trees/quickstart.yaml")
result = tree.run({"question": "What is 17 * 23?"})   # RunResult: status, state, reason
print(result.status, result.state["final_answer"])
tree.close()
```
Run it as a whole (`run`, `await arun`) or tick by tick (`tick`); watch it through `events`;
answer a guard's held calls with `approve` / `reject` and an MCP server's questions with
`answer`; draw it with `to_dot`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import py_trees
from py_trees.common import Status

from jianmu_bt.loader.diagnostics import Diagnostic
from jianmu_bt.loader.model import TreeFileBase
from jianmu_bt.loader.node_info import NodeInfo, node_info
from jianmu_bt.loader.session import LoadedRunner, ProviderSession
from jianmu_bt.loader.state_model import StateInfo
from jianmu_bt.runtime import EventBus, StateManager
from jianmu_bt.runtime.durable_driver import DurableDriver
from jianmu_bt.runtime.tree_desk import TreeDesk
from jianmu_bt.tools import ToolSet


class TreeInputError(ValueError):
    """A run was started without a value for a field the file marks `input: true`."""


class Tree(TreeDesk, DurableDriver):
    """A loaded tree. Close it (or use `with`) to stop its background loop and free its state.

    `model` is the file's settings (name, description, state, tools, llm, guard); its nodes'
    configs are not kept once the behaviours are built (those are `root` and `nodes`).
    """

    runner: LoadedRunner

    def __init__(
        self,
        *,
        name: str,
        path: Path | None,
        model: TreeFileBase,
        root: py_trees.behaviour.Behaviour,
        state: StateManager,
        state_info: StateInfo,
        runner: LoadedRunner,
        findings: list[Diagnostic],
        guards: list[Any],
        digest: str = "",
    ) -> None:
        self.name = name
        self.path = path
        self.model = model
        self.root = root
        self.state = state
        self.state_info = state_info
        self.runner = runner
        self.findings = findings
        self._guards = guards
        self.digest = digest
        self._closed = False
        self._keep_initial()

    # -- parts -----------------------------------------------------------------------------

    @property
    def description(self) -> str:
        """The file's `description` (or "")."""
        return self.model.description or ""

    @property
    def events(self) -> EventBus:
        """The run's event bus: `tree.events.subscribe(callback)`."""
        return self.runner.events

    @property
    def toolset(self) -> ToolSet:
        """All tools of the tree (with the providers' tools while they are running)."""
        session = self.providers
        return session.toolset if session.toolset is not None else session.catalog.toolset()

    @property
    def providers(self) -> ProviderSession:
        """The tree's tool providers (its `mcp:` servers, ...), for using its tools outside a run.

        A run starts and closes them itself. To serve or call the tree's tools without running
        it: `if tree.providers.needed: await tree.providers.open()`, use `tree.toolset`, then
        `await tree.providers.close()` (in the same event loop).
        """
        return self.runner.session

    @property
    def nodes(self) -> dict[str, py_trees.behaviour.Behaviour]:
        """Every behaviour of the tree by its stable id (its path, or its `id:`)."""
        found = {}
        pending = [self.root]
        while pending:  # pre-order: a parent before its children, children in order
            behaviour = pending.pop()
            info = node_info(behaviour)
            if info is not None:
                found[info.id] = behaviour
            pending.extend(reversed(behaviour.children))
        return found

    def node_info(self, node_id: str) -> NodeInfo:
        """The NodeInfo of the node with this id (KeyError when there is none)."""
        info = node_info(self.nodes[node_id])
        assert info is not None
        return info

    @property
    def inputs(self) -> list[str]:
        """The state fields the file marks `input: true`."""
        return [name for name, facts in self.state_info.fields.items() if facts.input]

    # -- running ---------------------------------------------------------------------------

    def _check_inputs(self, inputs: Mapping[str, Any] | None) -> None:
        given = dict(inputs or {})
        missing = [
            f"{name} ({self.state_info.fields[name].type})"
            for name in self.inputs
            if name not in given
            and not self.state_info.fields[name].has_default
            and self.state.read_port(name) is None
        ]
        if missing:
            first = missing[0].split(" ")[0]
            raise TreeInputError(
                f"tree '{self.name}' needs input(s): {', '.join(missing)}; pass them with "
                f"run(inputs={{'{first}': ...}}) or `jianmu run --set {first}=...`"
            )

    def tick(self) -> Status:
        """One tick from synchronous code (the first one starts the tree's providers)."""
        self._check_open()
        return self.runner.tick()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"tree '{self.name}' is closed")

    # -- inspection ------------------------------------------------------------------------

    def validate(self) -> list[Diagnostic]:
        """The static checks' findings (warnings) from loading; errors would have stopped it."""
        return list(self.findings)

    def to_dot(self, statuses: Mapping[str, Any] | None = None) -> str:
        """The tree as Graphviz DOT text, optionally coloured by node statuses."""
        from jianmu_bt.viz import tree_to_dot  # the display layer loads on use

        return tree_to_dot(self.root, statuses=statuses, title=self.name)

    # -- approvals -------------------------------------------------------------------------

    @property
    def guard(self) -> Any:
        """The file's guard (a GuardEnforcer from `guard:` or `load_tree(guard=...)`), or None."""
        return self.runner.context.services.get("guard")

    @property
    def guards(self) -> list[Any]:
        """Every guard of the tree: the file's, then those of agents that have their own."""
        return list(self._guards)

    # -- closing ---------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the tick loop, close providers and LLM clients, free the state. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self.runner.close()
        finally:
            self.state.close()

    async def aclose(self) -> None:
        """`close()` from async code (the blocking parts run in a worker thread)."""
        if self.runner.has_background_loop:
            await anyio.to_thread.run_sync(self.close)
            return
        if not self._closed:
            await self.runner.close_owned()
        self.close()

    def __enter__(self) -> Tree:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Tree:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        where = f" from {self.path}" if self.path else ""
        return f"<Tree {self.name!r}{where}: {len(self.nodes)} nodes>"

"""What `jianmu mcp serve --tree FILE` offers besides the tree's tools.

- Prompts: each `agent` (its system prompt, then its goal) and each `llm` step with a system
  prompt, as an MCP prompt named after the node, whose arguments are the state fields its
  templates refer to (described, required and defaulted as the file's `state:` says).
- Resources: the tree's file(s), read-only; with `--traces DIR` the traces of runs (JSON lines);
  with `--store PATH` the tree's durable runs and their checkpoints (only this tree's: by digest,
  or name and file path; `jianmu_bt.mcp.server_resources`).
- With `--run-tool`, a tool `run_<tree name>` that runs the whole tree with the given state
  values. Its run events (node status changes, tool calls) go to the client as progress
  notifications, its trace to `--traces`, and with `--store` the run is durable (a call that
  needs an approval pauses it instead of waiting for a person who is not there). The questions
  of its `ask` steps go to the client as `elicitation/create` (form mode) when the client
  declared elicitation and the request can carry a server's request (not on the 2026-07-28
  protocol); the client's answer goes back to the run (`jianmu_bt.mcp.server_questions`).
  Otherwise nobody attends them: a durable run pauses, another takes the step's default or
  fails. The runs use a
  second copy of the tree, loaded on the first call: each run is under the tree's guard with
  counters of its own (as `jianmu run`). The run tool itself is a served call like the others,
  checked and counted by the served guard as a call without effects (`rate_limits:
  {run_<tree>: ...}` bounds how often a client may run the tree; an `allow:` list must name it).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from jianmu_bt.cli.errors import CLIError
from jianmu_bt.mcp.server import ServerPart
from jianmu_bt.mcp.server_prompts import PromptArgument, PromptSpec
from jianmu_bt.mcp.server_questions import client_asker, while_asking
from jianmu_bt.runtime.context import new_run_id
from jianmu_bt.runtime.events import Event, TraceWriter
from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.call_context import report_progress
from jianmu_bt.tools.toolset import ToolSet

logger = logging.getLogger(__name__)

#: Event types a served run reports as progress.
PROGRESS_EVENTS = (
    "node.status",
    "tool.call.started",
    "tool.call.completed",
    "tool.call.failed",
    "tool.progress",
)


def _state_arguments(tree: Any) -> dict[str, PromptArgument]:
    """Every state field as a prompt argument (description, required, default)."""
    fields = tree.state_info.fields
    model_fields = getattr(tree.state_info.model, "model_fields", {})
    found = {}
    for name, facts in fields.items():
        declared = model_fields.get(name)
        default = getattr(declared, "default", None)
        plain = default if isinstance(default, (str, int, float, bool)) else None
        found[name] = PromptArgument(
            name=name,
            description=getattr(declared, "description", None) or f"{facts.type} state field",
            required=not facts.has_default,
            default=plain,
        )
    return found


def tree_prompts(tree: Any) -> list[PromptSpec]:
    """The prompts of a loaded tree's `agent` and `llm` nodes (see the module docstring)."""
    from jianmu_bt.loader.node_info import node_info

    known = _state_arguments(tree)
    groups: dict[str, dict[str, Any]] = {}
    for node_id, behaviour in tree.nodes.items():
        info = node_info(behaviour)
        if info is None:
            continue
        owner = info.group or node_id
        if info.kind == "agent":
            groups.setdefault(owner, {})["info"] = info
        elif info.kind == "llm" and getattr(behaviour, "system_prompt", None):
            entry = groups.setdefault(owner, {})
            entry.setdefault("info", info)
            entry["system"] = behaviour.system_prompt
        elif info.part == "goal" and isinstance(getattr(behaviour, "content", None), str):
            groups.setdefault(owner, {})["goal"] = behaviour.content
    specs: list[PromptSpec] = []
    used: set[str] = set()
    for owner, entry in groups.items():
        messages = [("user", entry[k]) for k in ("system", "goal") if entry.get(k)]
        if not messages or "info" not in entry:
            continue
        info = entry["info"]
        name = _unique(re.sub(r"[^A-Za-z0-9_.-]", "_", info.name) or owner, used)
        description = f"the {info.kind} '{info.name}' of tree '{tree.name}' ({info.location})"
        specs.append(PromptSpec.from_templates(name, description, messages, known))
    return specs


def _unique(name: str, used: set[str]) -> str:
    candidate, n = name, 2
    while candidate in used:
        candidate, n = f"{name}_{n}", n + 1
    used.add(candidate)
    return candidate


def tree_files(tree: Any) -> dict[str, Path]:
    """The files the tree was loaded from (the main file and its subtree files), by name."""
    from jianmu_bt.loader.node_info import node_info

    paths: list[Path] = [Path(tree.path).resolve()] if tree.path else []
    for behaviour in tree.nodes.values():
        info = node_info(behaviour)
        if info is not None and info.file:
            path = Path(info.file).resolve()
            if path.is_file() and path not in paths:
                paths.append(path)
    used: set[str] = set()
    return {_unique(path.name, used): path for path in paths}


class TreeRunTool(Tool):
    """Runs the served tree as one tool call (see the module docstring)."""

    parallel_safe = False
    #: None of its own: the served guard counts its calls (rate limits), each run guards its
    #: own calls and their effects.
    effect_tags: tuple[str, ...] = ()

    def __init__(
        self,
        tree: Any,
        path: str | Path,
        *,
        store: Any = None,
        traces: Path | None = None,
    ) -> None:
        self.name = "run_" + re.sub(r"[^A-Za-z0-9_-]", "_", tree.name)[:60]
        self.description = (
            f"Run the behaviour tree '{tree.name}' to its end with the given state values; "
            "returns its status, run id and final state. " + (tree.description or "")
        ).strip()
        self.input_schema = _input_schema(tree)
        self.output_schema = {
            "type": "object",
            "properties": {
                "status": {"type": "string", "enum": ["succeeded", "failed", "paused"]},
                "run_id": {"type": "string"},
                "reason": {"type": "string"},
                "state": {"type": "object"},
            },
            "required": ["status", "run_id", "reason", "state"],
        }
        self._path = path
        self._store = store
        self._traces = traces
        self._runs: Any = None  # a second copy of the tree, loaded on the first call
        self._lock = anyio.Lock()

    async def run(self, input: Any) -> dict[str, Any]:
        """Run the tree once (one run at a time); events become progress reports, and the
        tree's questions go to the client when it can be asked (elicitation)."""
        from jianmu_bt.cli.loading import load_tree_file

        ask = client_asker()  # the client of this request (the run's tasks see it too)
        async with self._lock:
            if self._runs is None:
                self._runs = load_tree_file(self._path)
            tree = self._runs
            run_id = new_run_id()
            seen = 0
            # Events are emitted inside the nodes' calls, where each node installs a progress
            # sink of its own; the report goes to the sink of this call (the MCP client's).
            outer = contextvars.copy_context()

            def report(event: Event) -> None:
                nonlocal seen
                if event.type in PROGRESS_EVENTS:
                    seen += 1
                    with contextlib.suppress(RuntimeError):  # (re-entered: skip one report)
                        outer.run(report_progress, seen, None, _describe(event))

            trace = None
            if self._traces is not None:
                self._traces.mkdir(parents=True, exist_ok=True)
                trace = TraceWriter(self._traces / f"{run_id}.jsonl")
            stops = [tree.events.subscribe(report)]
            if trace is not None:
                stops.append(tree.events.subscribe(trace))
            try:
                result = await while_asking(
                    tree,
                    ask,
                    lambda: tree.arun(
                        dict(input or {}), run_id=run_id, store=self._store, hold="pause"
                    ),
                )
            finally:
                for stop in stops:
                    stop()
                if trace is not None:
                    trace.close()
        return {
            "status": result.run_status,
            "run_id": result.run_id,
            "reason": result.reason,
            "state": _json_state(result.state),
        }

    async def aclose(self) -> None:
        """Close the run copy of the tree."""
        if self._runs is not None:
            await self._runs.aclose()
            self._runs = None


def _describe(event: Event) -> str:
    data = event.data
    if event.type == "node.status":
        return f"{event.node or data.get('id')}: {data.get('old')} -> {data.get('new')}"
    if event.type == "tool.progress":
        done = f"{data.get('progress')}" + (f"/{data['total']}" if data.get("total") else "")
        return f"{data.get('tool')}: {done} {data.get('message') or ''}".strip()
    return f"{event.type} {data.get('tool', '')}".strip()


def _input_schema(tree: Any) -> dict[str, Any]:
    schema = tree.state_info.model.model_json_schema()
    fields = tree.state_info.fields
    properties = {
        name: {k: v for k, v in prop.items() if k != "title"}
        for name, prop in schema.get("properties", {}).items()
        if name in fields and not fields[name].builtin
    }
    required = [n for n in tree.inputs if n in properties and not fields[n].has_default]
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if "$defs" in schema:
        out["$defs"] = schema["$defs"]
    if required:
        out["required"] = required
    return out


def _json_state(state: dict[str, Any]) -> dict[str, Any]:
    import json

    return dict(json.loads(json.dumps(state, default=str)))


def runs_of(tree: Any) -> Callable[[Any], bool]:
    """Which runs of the store are the served tree's (its resources serve only those)."""
    from jianmu_bt.mcp.server_resources import runs_of_tree

    path = str(Path(tree.path).resolve()) if getattr(tree, "path", None) else ""
    return runs_of_tree(tree.name, getattr(tree, "digest", "") or "", path)


class ServedTree:
    """The tools, guard, resources and prompts `jianmu mcp serve --tree` offers for `tree`.

    Build it once the tree's providers started: `served` is what to serve; it follows the
    providers' tool lists (a provider that announces a change makes the served clients hear
    `notifications/tools/list_changed`). `aclose` ends all that.
    """

    def __init__(self, args: Any, tree: Any) -> None:
        from jianmu_bt.mcp.guarded import EnforcerGuard
        from jianmu_bt.mcp.server_prompts import ServedPrompts
        from jianmu_bt.mcp.server_resources import ServedResources
        from jianmu_bt.mcp.server_tools import ServedTools

        store_location = getattr(args, "store", None)
        traces = Path(args.traces) if getattr(args, "traces", None) else None
        if traces is not None and traces.exists() and not traces.is_dir():
            raise CLIError(f"--traces {traces}: not a folder")
        self.store = None
        if store_location:
            from jianmu_bt.store import StoreError, open_store

            try:
                self.store = open_store(store_location)
            except (StoreError, OSError) as exc:
                raise CLIError(f"--store {store_location}: {exc}") from None
        self._tree = tree
        self._unsubscribe: list[Callable[[], None]] = []
        self.run_tool = None
        try:
            toolset = tree.toolset
            if getattr(args, "run_tool", False):
                self.run_tool = TreeRunTool(tree, args.tree, store=self.store, traces=traces)
                toolset = toolset.with_tools([self.run_tool])
            self.toolset = toolset
            self.served = ServedTools(toolset)
            # The run tool is guarded like the others, as a call without effects: rate limits
            # and deny lists apply to it, so a client cannot loop it to spend the budgets of
            # fresh runs again and again (each run's own calls are guarded inside the run).
            self.guard = EnforcerGuard(tree.guard) if tree.guard is not None else None
            self.extras: list[ServerPart] = [
                ServedResources(
                    tree_files(tree), store=self.store, traces=traces, runs_of=runs_of(tree)
                ),
                ServedPrompts(tree_prompts(tree)),
            ]
            for provider in tree.providers.catalog.providers:
                listen = getattr(provider, "on_tools_changed", None)
                if callable(listen):
                    self._unsubscribe.append(listen(self._provider_changed))
        except BaseException:
            self._close_store()
            raise

    async def _provider_changed(self, provider: Any) -> None:
        """Serve the tree's tools with `provider`'s new list (a clash keeps the old tools)."""
        from jianmu_bt.mcp.provider import merge_providers_tools

        catalog = self._tree.providers.catalog
        try:
            tools = merge_providers_tools(catalog.providers, extra=catalog.toolset().tools)
        except Exception as exc:
            logger.warning("the served tools stay as they were: %s", exc)
            return
        toolset = ToolSet.from_tools(tools)
        if self.run_tool is not None:
            toolset = toolset.with_tools([self.run_tool])
        await self.served.replace(toolset)

    def _close_store(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None

    async def aclose(self) -> None:
        """Stop following the providers; close the run copy of the tree and the store."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        try:
            if self.run_tool is not None:
                await self.run_tool.aclose()
        finally:
            self._close_store()


__all__ = ["PROGRESS_EVENTS", "ServedTree", "TreeRunTool", "tree_files", "tree_prompts"]

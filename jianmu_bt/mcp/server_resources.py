"""Read-only MCP resources of a served tree: its files, its run traces, its durable runs.

| URI                                        | what                                          |
|--------------------------------------------|-----------------------------------------------|
| `jianmu://tree/{name}`                     | a tree file that was served (YAML text)       |
| `jianmu://traces/{run_id}`                 | the trace of a run (JSON lines, one event each) |
| `jianmu://runs/{run_id}`                   | a durable run's record (JSON)                 |
| `jianmu://runs/{run_id}/checkpoints/{seq}` | a checkpoint: the run's state snapshot (JSON) |

Nothing a client sends is used as a path. Tree files are the exact files given at start-up,
looked up by name. A trace is `<traces>/<run_id>.jsonl` only for a run id of letters, digits, `.`,
`_` and `-` (not starting with a dot) whose resolved file is inside the traces folder (a symlink
pointing out is refused). Runs and checkpoints are read from the run store through its API;
with `runs_of` (a served tree's `runs_of_tree`) only the runs it accepts are listed and
readable: another tree's run is "not found", as a run that does not exist.
An unknown URI is the MCP "resource not found" error (-32002), naming the URI.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from jianmu_bt.store.base import RunStore
from jianmu_bt.store.errors import StoreError
from jianmu_bt.store.records import RunRecord

SCHEME = "jianmu://"
#: JSON-RPC error code of an unknown resource (MCP specification).
RESOURCE_NOT_FOUND = -32002
#: Runs listed at most by `resources/list` (the newest); older ones are still readable.
MAX_LISTED_RUNS = 100
#: Bytes of one resource read at most (a trace can grow large).
MAX_READ_BYTES = 8 * 1024 * 1024

_RUN_ID = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$")
_RUN = re.compile(r"^jianmu://runs/(?P<run>[^/]+)$")
_CHECKPOINT = re.compile(r"^jianmu://runs/(?P<run>[^/]+)/checkpoints/(?P<seq>[0-9]{1,9})$")
_TRACE = re.compile(r"^jianmu://traces/(?P<run>[^/]+)$")
_TREE = re.compile(r"^jianmu://tree/(?P<name>[^/]+)$")


def runs_of_tree(name: str, digest: str = "", path: str = "") -> Callable[[RunRecord], bool]:
    """Which runs are a tree's: those recorded with its digest (the same tree), or with its name
    and file path (the same file, edited since)."""

    def belongs(run: RunRecord) -> bool:
        if digest and run.tree_digest == digest:
            return True
        return bool(path) and run.tree == name and run.tree_path == path

    return belongs


class ResourceMissing(LookupError):
    """No resource has this URI; the message names it."""


class ServedResources:
    """Tree files, traces and store records as MCP resources (a `ServerPart`)."""

    changes_resources = False
    changes_prompts = False

    def __init__(
        self,
        files: Mapping[str, str | Path] | None = None,
        *,
        store: RunStore | None = None,
        traces: str | Path | None = None,
        runs_of: Callable[[RunRecord], bool] | None = None,
    ) -> None:
        self.files = {name: Path(path) for name, path in (files or {}).items()}
        for name in self.files:
            if "/" in name or not name:
                raise ValueError(f"a served file's name cannot contain '/': {name!r}")
        self.store = store
        self.traces = Path(traces).resolve() if traces is not None else None
        self.runs_of = runs_of

    # -- the protocol ------------------------------------------------------------------------

    def handlers(self) -> dict[str, Any]:
        """`on_list_resources`, `on_list_resource_templates`, `on_read_resource`."""
        return {
            "on_list_resources": self._list,
            "on_list_resource_templates": self._templates,
            "on_read_resource": self._read,
        }

    async def _list(self, ctx: Any, params: Any) -> Any:
        import anyio.to_thread
        import mcp_types as types

        # Blocking (a folder listing, store queries): in a worker thread, as reads are.
        return types.ListResourcesResult(resources=await anyio.to_thread.run_sync(self.resources))

    async def _templates(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        return types.ListResourceTemplatesResult(resource_templates=self.templates())

    async def _read(self, ctx: Any, params: Any) -> Any:
        import anyio.to_thread
        import mcp_types as types
        from mcp import MCPError

        uri = str(params.uri)
        try:
            text, mime = await anyio.to_thread.run_sync(self.read, uri)
        except ResourceMissing as exc:
            raise MCPError(code=RESOURCE_NOT_FOUND, message=str(exc)) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)]
        )

    # -- what there is (blocking: runs in a worker thread) ------------------------------------

    def resources(self) -> list[Any]:
        """The concrete resources: every tree file, every trace, the newest runs."""
        import mcp_types as types

        found = [
            types.Resource(
                uri=f"{SCHEME}tree/{name}",
                name=name,
                description="a file of the served tree",
                mime_type="application/yaml",
            )
            for name in self.files
        ]
        if self.traces is not None and self.traces.is_dir():
            for path in sorted(self.traces.glob("*.jsonl")):
                if _RUN_ID.match(path.stem):
                    found.append(
                        types.Resource(
                            uri=f"{SCHEME}traces/{path.stem}",
                            name=f"trace {path.stem}",
                            mime_type="application/x-ndjson",
                        )
                    )
        if self.store is not None:
            for run in self._listed_runs():
                found.append(
                    types.Resource(
                        uri=f"{SCHEME}runs/{run.run_id}",
                        name=f"run {run.run_id}",
                        description=f"tree {run.tree}, {run.status}",
                        mime_type="application/json",
                    )
                )
        return found

    def _listed_runs(self) -> list[RunRecord]:
        """The newest runs served (at most MAX_LISTED_RUNS)."""
        assert self.store is not None
        if self.runs_of is None:
            return self.store.runs(limit=MAX_LISTED_RUNS)
        return [run for run in self.store.runs() if self.runs_of(run)][:MAX_LISTED_RUNS]

    def _served_run(self, run_id: str, uri: str) -> RunRecord:
        """The record of a served run; ResourceMissing for an unknown or another tree's run."""
        assert self.store is not None
        try:
            record = self.store.get_run(run_id)
        except (StoreError, KeyError, LookupError) as exc:
            # The store's message names recent runs, maybe other trees': not when filtered.
            detail = "" if self.runs_of is not None else f" ({exc})"
            raise ResourceMissing(f"no run {uri}{detail}") from None
        if self.runs_of is not None and not self.runs_of(record):
            raise ResourceMissing(f"no run {uri}")  # as for a run that does not exist
        return record

    def templates(self) -> list[Any]:
        """URI templates for what can be read by id."""
        import mcp_types as types

        templates = []
        if self.traces is not None:
            templates.append(
                types.ResourceTemplate(
                    uri_template=f"{SCHEME}traces/{{run_id}}",
                    name="run trace",
                    description="the events of a run, one JSON object a line",
                    mime_type="application/x-ndjson",
                )
            )
        if self.store is not None:
            templates += [
                types.ResourceTemplate(
                    uri_template=f"{SCHEME}runs/{{run_id}}",
                    name="durable run",
                    description="a run's record in the run store",
                    mime_type="application/json",
                ),
                types.ResourceTemplate(
                    uri_template=f"{SCHEME}runs/{{run_id}}/checkpoints/{{seq}}",
                    name="checkpoint",
                    description="a run's state snapshot at checkpoint seq (1, 2, ...)",
                    mime_type="application/json",
                ),
            ]
        return templates

    # -- reading (blocking: runs in a worker thread) -----------------------------------------

    def read(self, uri: str) -> tuple[str, str]:
        """The text and MIME type of `uri`; ResourceMissing when there is no such resource."""
        if found := _TREE.match(uri):
            path = self.files.get(found["name"])
            if path is None:
                raise ResourceMissing(f"no tree file {uri}; see resources/list")
            return _read_text(path, uri), "application/yaml"
        if (found := _TRACE.match(uri)) and self.traces is not None:
            return _read_text(self._trace_path(found["run"], uri), uri), "application/x-ndjson"
        if (found := _CHECKPOINT.match(uri)) and self.store is not None:
            run_id = _checked_run_id(found["run"], uri)
            self._served_run(run_id, f"{SCHEME}runs/{run_id}")
            try:
                checkpoint = self.store.checkpoint(run_id, int(found["seq"]))
            except (StoreError, KeyError, LookupError) as exc:
                raise ResourceMissing(f"no checkpoint {uri} ({exc})") from None
            document = {
                "run_id": checkpoint.run_id,
                "seq": checkpoint.seq,
                "created": checkpoint.created,
                "state": checkpoint.data.get("state"),
            }
            return json.dumps(document, default=str, ensure_ascii=False), "application/json"
        if (found := _RUN.match(uri)) and self.store is not None:
            run_id = _checked_run_id(found["run"], uri)
            record = self._served_run(run_id, uri)
            try:
                seqs = [c.seq for c in self.store.history(run_id)]
            except (StoreError, KeyError, LookupError) as exc:
                raise ResourceMissing(f"no run {uri} ({exc})") from None
            document = {**asdict(record), "checkpoints": seqs}
            return json.dumps(document, default=str, ensure_ascii=False), "application/json"
        raise ResourceMissing(f"no resource {uri}; see resources/list and resources/templates")

    def _trace_path(self, run_id: str, uri: str) -> Path:
        assert self.traces is not None
        _checked_run_id(run_id, uri)
        path = (self.traces / f"{run_id}.jsonl").resolve()
        if not path.is_relative_to(self.traces) or not path.is_file():
            raise ResourceMissing(f"no trace {uri}")
        return path


def _checked_run_id(run_id: str, uri: str) -> str:
    if not _RUN_ID.match(run_id):
        raise ResourceMissing(f"no resource {uri}: not a run id")
    return run_id


def _read_text(path: Path, uri: str) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_READ_BYTES + 1)
    except OSError as exc:
        raise ResourceMissing(f"cannot read {uri} ({exc.strerror or exc})") from None
    if len(data) > MAX_READ_BYTES:
        raise ResourceMissing(f"{uri} is larger than {MAX_READ_BYTES} bytes")
    return data.decode("utf-8", errors="replace")


__all__ = ["RESOURCE_NOT_FOUND", "SCHEME", "ResourceMissing", "ServedResources", "runs_of_tree"]

"""Analysis: each node's state reads and writes and tools, checked against the state and tools.

Runs on the expanded records before anything is built. What a node reads and writes comes from
its kind's `io` (the registry), renamed through the node's subtree key map. A reference to a state
key that does not exist, a tool that no source offers, a condition that does not parse, and a
repeated explicit id are errors here; the graph checks (`checks.py`) come after.
"""

from __future__ import annotations

from jianmu_bt.loader.catalog import ToolCatalog
from jianmu_bt.loader.diagnostics import Diagnostic, quote_list
from jianmu_bt.loader.node_facts import NodeIO, NodeProblem
from jianmu_bt.loader.positions import MISSING, Path, child_value
from jianmu_bt.loader.records import NodeRecord
from jianmu_bt.loader.registry import get_kind
from jianmu_bt.loader.servers import duplicate_servers, find_server, unknown_server
from jianmu_bt.loader.state_model import StateInfo
from jianmu_bt.tools.references import did_you_mean


def _map_io(io: NodeIO, record: NodeRecord) -> NodeIO:
    keys = record.keys
    if keys.identity:
        return io
    return NodeIO(
        reads={keys(k): p for k, p in io.reads.items()},
        writes={keys(k): p for k, p in io.writes.items()},
        literal_writes=[(keys(k), v, p) for k, v, p in io.literal_writes],
        text_writes=[(keys(k), p) for k, p in io.text_writes],
        schema_writes=[(keys(k), schema, p) for k, schema, p in io.schema_writes],
        copies=[(keys(a), keys(b), p) for a, b, p in io.copies],
        tools=io.tools,
        output_tool=io.output_tool,
        servers=io.servers,
    )


def reference_position(record: NodeRecord, path: Path, inner_key: str) -> tuple[int, int]:
    """Where `{inner_key}` (or the name) appears in the string at `path`, else the value's start."""
    value = record.unit.source
    text = _value_at(record, path)
    if isinstance(text, str):
        for needle in ("{" + inner_key, inner_key):
            offset = text.find(needle)
            if offset >= 0:
                return value.inside(record.config_path(*path), offset)
    return record.at(path, key=bool(path) and path[0] == "values")


def _value_at(record: NodeRecord, path: Path) -> object:
    current: object = record.unit.data
    for part in record.config_path(*path):
        current = child_value(current, part)
        if current is MISSING:
            return None
    return current


def analyze(
    records: dict[str, NodeRecord], state: StateInfo, catalog: ToolCatalog
) -> list[Diagnostic]:
    """Fill each record's `io` and report unknown keys, unknown tools, bad configs, repeated ids
    and MCP servers that a node names but the tree lacks, or that two entries name alike."""
    problems: list[Diagnostic] = []
    fields = state.fields
    deferred = bool(catalog.providers)
    explicit_ids: dict[str, NodeRecord] = {}
    for record in records.values():
        kind = get_kind(record.kind)
        if kind is None:
            continue
        if record.config.id:
            first = explicit_ids.get(record.id.split("#")[0])
            if first is not None:
                line = first.at(("id",))[0]
                problems.append(
                    record.diagnostic(
                        f"duplicate id '{record.config.id}' (also used at line {line} of "
                        f"{first.unit.file}); ids must be unique",
                        "duplicate-id",
                        ("id",),
                    )
                )
            else:
                explicit_ids[record.id] = record
        try:
            raw = kind.io(record.config)
        except NodeProblem as exc:
            problems.append(_problem(record, exc))
            record.io = NodeIO()
            continue
        io = record.io = _map_io(raw, record)
        for key, path in [*io.reads.items(), *io.writes.items()]:
            if key in fields:
                continue
            inverse = {record.keys(k): k for k in (*raw.reads, *raw.writes)}
            inner = inverse.get(key, key)
            renamed = f" (renamed from '{inner}' by a subtree remap)" if inner != key else ""
            line, col = reference_position(record, path, inner)
            problems.append(
                Diagnostic(
                    record.unit.file,
                    line,
                    col,
                    "error",
                    f"unknown state key '{key}'{renamed}{did_you_mean(key, fields)}; declare it "
                    f"under `state:` (fields: {quote_list(fields)})",
                    "unknown-state-key",
                )
            )
        for name, path in io.tools:
            if catalog.get(name) is not None:
                continue
            reason = catalog.why_missing(name, record.unit.file)
            if deferred and reason.startswith("unknown tool"):
                problems.append(
                    record.diagnostic(
                        f"tool '{name}' is not a built-in or Python tool; it must come from a "
                        "tool provider (MCP server), which is checked when the tree starts",
                        "provider-tool",
                        path,
                        severity="warning",
                    )
                )
                continue
            problems.append(record.diagnostic(reason, "unknown-tool", path))
        for name, path in io.servers:
            if find_server(catalog.providers, name) is None:
                message = unknown_server(name, catalog.providers)
                problems.append(record.diagnostic(message, "unknown-mcp-server", path))
    units = {record.unit.key: record.unit for record in records.values()}
    problems += duplicate_servers(units.values(), catalog.providers)
    return problems


def _problem(record: NodeRecord, exc: NodeProblem) -> Diagnostic:
    if exc.offset >= 0 and exc.path:
        line, col = record.unit.source.inside(record.config_path(*exc.path), exc.offset)
        return Diagnostic(record.unit.file, line, col, "error", exc.message, exc.code)
    return record.diagnostic(exc.message, exc.code, exc.path)

"""Static checks on the expanded tree, before the first tick.

| check | severity | finding |
|---|---|---|
| `unwritten-read` | error | a read of a key nothing writes, without default, not an input |
| `read-before-write` | error | the same, for a key only the reading node itself writes |
| `type-mismatch` | error | a literal, copied value or tool output that the field's type refuses |
| `type-maybe` | warning | text (template, LLM answer, text output) written to a number field |
| `unreachable` | warning | a child after an always-succeeding (selector) / failing (sequence) one |
| `duplicate-name` | warning | two nodes the file names alike (default names are made unique) |

Unknown keys, tools, node kinds and include cycles are found earlier (analysis, validation and
expansion) and are errors. The checks walk the expanded records (a tree, in pre-order) directly;
`tree_graph` gives the same tree as a networkx graph for tools that want one (networkx loads
only then, so validating a file does not pay for importing it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jianmu_bt.loader.analysis import reference_position
from jianmu_bt.loader.catalog import ToolCatalog
from jianmu_bt.loader.diagnostics import Diagnostic
from jianmu_bt.loader.node_facts import NodeProblem, Outcome
from jianmu_bt.loader.positions import Path
from jianmu_bt.loader.records import NodeRecord
from jianmu_bt.loader.registry import get_kind
from jianmu_bt.loader.state_model import FieldFacts, StateInfo
from jianmu_bt.runtime.reducers import APPEND, REPLACE
from jianmu_bt.runtime.state_schema import StateValidationError, compile_schema
from jianmu_bt.tools.base import DEFAULT_OUTPUT_SCHEMA

if TYPE_CHECKING:
    import networkx as nx

_TEXT_MAY_PARSE = {"integer", "number", "boolean"}


def tree_graph(records: dict[str, NodeRecord], root_id: str) -> nx.DiGraph[str]:
    """The tree as a DiGraph: node ids with their `record`, edges parent -> child in order."""
    import networkx as nx

    graph: nx.DiGraph[str] = nx.DiGraph()
    for record in records.values():
        graph.add_node(record.id, record=record)
    for record in records.values():
        for child in record.children:
            graph.add_edge(record.id, child)
    graph.graph["root"] = root_id
    return graph


def _compat(json_types: set[str], target: FieldFacts) -> str:
    """ "ok", "maybe" (text that may parse) or "no" for values of `json_types` into `target`."""
    if target.type == "any" or not json_types or any(target.accepts_json(t) for t in json_types):
        return "ok"
    if json_types <= {"string"} and target.type in _TEXT_MAY_PARSE:
        return "maybe"
    return "no"


def _json_types(schema: object) -> set[str]:
    if not isinstance(schema, dict) or schema == DEFAULT_OUTPUT_SCHEMA:
        return set()  # not declared: nothing to check
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    return set()


def check_tree(
    records: dict[str, NodeRecord], root_id: str, state: StateInfo, catalog: ToolCatalog
) -> list[Diagnostic]:
    """Every finding of the static checks on the expanded tree (records in pre-order), located."""
    nodes = list(records.values())
    findings: list[Diagnostic] = []
    findings += _unwritten_reads(nodes, state)
    findings += _write_types(nodes, state, catalog)
    findings += _unreachable(records, root_id)
    findings += _duplicate_names(nodes)
    return findings


def _unwritten_reads(records: list[NodeRecord], state: StateInfo) -> list[Diagnostic]:
    writers: dict[str, set[str]] = {}
    for record in records:
        for key in record.io.writes if record.io else ():
            writers.setdefault(key, set()).add(record.id)
    found = []
    for record in records:
        for key, path in record.io.reads.items() if record.io else ():
            facts = state.fields.get(key)
            if facts is None or facts.has_default or facts.input:
                continue
            by = writers.get(key, set())
            if by - {record.id}:
                continue
            line, col = reference_position(record, path, key)
            if by:  # only this node writes it: its first read finds nothing
                message = (
                    f"{record.kind} '{record.name}' reads state key '{key}' before anything "
                    "writes it: only this node writes it, and the field has no default"
                )
                code = "read-before-write"
            else:
                message = (
                    f"{record.kind} '{record.name}' reads state key '{key}', which no node "
                    "writes and which has no default"
                )
                code = "unwritten-read"
            found.append(
                Diagnostic(
                    record.unit.file,
                    line,
                    col,
                    "error",
                    message + "; give it a `default`, mark it `input: true`, or write it first",
                    code,
                    f"declare it as `{key}: {{type: {facts.type}, default: ...}}` under `state:`",
                )
            )
    return found


def _write_types(
    records: list[NodeRecord], state: StateInfo, catalog: ToolCatalog
) -> list[Diagnostic]:
    plan = compile_schema(state.model)

    def appended(target: str) -> bool:
        """A value written to an `append` field is added to its list as one item (a list
        extends it): any value fits."""
        field = plan.fields.get(target)
        return field is not None and field.reducer == APPEND

    found = []
    for record in records:
        io = record.io
        if io is None:
            continue
        for key, value, path in io.literal_writes:
            field = plan.fields.get(key)
            if field is None:
                continue
            try:  # as the StateManager would write it: through the field's reducer
                start = field.info.get_default(call_default_factory=True, validated_data={})
                field.reduce(field.reducer or REPLACE, start, value)
            except StateValidationError as exc:
                found.append(record.diagnostic(str(exc), "type-mismatch", path))
        for source, target, path in io.copies:
            src, dst = state.fields.get(source), state.fields.get(target)
            if src is None or dst is None or src.type == "any":
                continue
            verdict = _compat(set(_as_json(src.type)), dst)
            message = f"copies '{source}' ({src.type}) into '{target}' ({dst.type})"
            found += _type_findings(record, verdict, message, path)
        for target, path in io.text_writes:
            dst = state.fields.get(target)
            if dst is None or appended(target):
                continue
            verdict = _compat({"string"}, dst)
            message = f"writes text to '{target}', a {dst.type} field"
            found += _type_findings(record, verdict, message, path)
        for target, schema, path in io.schema_writes:
            dst = state.fields.get(target)
            types = _json_types(schema)
            if dst is None or not types or appended(target):
                continue
            message = (
                f"its output_schema describes {'/'.join(sorted(types))} values, but '{target}' "
                f"is a {dst.type} field"
            )
            verdict = _compat(types, dst)
            found += _type_findings(record, "no" if verdict == "maybe" else verdict, message, path)
        # only for a tool step's output (a miss on a pydantic model is slow: ask only then)
        output = getattr(record.config, "output", None) if io.output_tool else None
        if io.output_tool and output:
            tool = catalog.get(io.output_tool)
            dst = state.fields.get(record.keys(output))
            if tool is None or dst is None or appended(record.keys(output)):
                continue
            types = _json_types(tool.output_schema)
            message = (
                f"tool '{tool.name}' outputs {'/'.join(sorted(types))}, but "
                f"'{record.keys(output)}' is a {dst.type} field"
            )
            found += _type_findings(record, _compat(types, dst), message, ("output",))
    return found


def _type_findings(record: NodeRecord, verdict: str, message: str, path: Path) -> list[Diagnostic]:
    """No finding for an "ok" verdict; an error for "no", a warning for "maybe" (may parse)."""
    if verdict == "ok":
        return []
    if verdict == "no":
        return [record.diagnostic(message, "type-mismatch", path, severity="error")]
    return [record.diagnostic(message, "type-maybe", path, severity="warning")]


def _as_json(state_type: str) -> list[str]:
    return {
        "string": ["string"],
        "integer": ["integer"],
        "number": ["number"],
        "boolean": ["boolean"],
        "list": ["array"],
        "dict": ["object"],
    }.get(state_type, [])


def outcomes(records: dict[str, NodeRecord], root_id: str) -> dict[str, Outcome]:
    """What each node below `root_id` can end in (children first), from its kind's rule."""
    result: dict[str, Outcome] = {}
    below = {root_id}
    for record in records.values():  # pre-order: a parent before its children
        if record.id in below:
            below.update(record.children)
    for record in reversed(list(records.values())):  # children before their parent
        if record.id not in below:
            continue
        kind = get_kind(record.kind)
        children = [result[c] for c in record.children if c in result]
        try:
            result[record.id] = kind.outcome(record.config, children) if kind else Outcome()
        except NodeProblem:  # a config the analysis refused (reported there): either way
            result[record.id] = Outcome()
    return result


def _unreachable(records: dict[str, NodeRecord], root_id: str) -> list[Diagnostic]:
    ends = outcomes(records, root_id)
    found = []
    for record in records.values():
        if record.kind not in ("sequence", "selector"):
            continue
        for index, child in enumerate(record.children[:-1]):
            outcome = ends.get(child)
            if outcome is None:
                continue
            if record.kind == "selector" and not outcome.can_fail:
                why = "always succeeds, so the selector never tries the children after it"
            elif record.kind == "sequence" and not outcome.can_succeed:
                why = "never succeeds, so the sequence never reaches the children after it"
            else:
                continue
            first = records[record.children[index + 1]]
            skipped = len(record.children) - index - 1
            blocker = records[child]
            found.append(
                first.diagnostic(
                    f"unreachable: '{blocker.name}' {why} ({skipped} child(ren) skipped)",
                    "unreachable",
                    severity="warning",
                )
            )
            break
    return found


def _duplicate_names(records: list[NodeRecord]) -> list[Diagnostic]:
    seen: dict[str, NodeRecord] = {}
    found = []
    for record in records:
        if not record.config.name:
            continue
        first = seen.get(record.name)
        if first is None:
            seen[record.name] = record
            continue
        if first.unit is record.unit and first.path == record.path:
            continue  # the same node included twice (a subtree used in two places)
        line = first.at(("name",))[0]
        found.append(
            record.diagnostic(
                f"duplicate node name '{record.name}' (also at line {line} of {first.unit.file}); "
                "events and displays will not tell them apart",
                "duplicate-name",
                ("name",),
                severity="warning",
            )
        )
    return found

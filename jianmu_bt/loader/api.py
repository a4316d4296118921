"""load_tree, validate_source, format_json_schema: the loader's entry points.

The pipeline runs one way, each stage taking only what the stages before it made. It keeps going
past the errors it can step over, so one run reports every problem of a file: a node the model
refuses is replaced by a placeholder that the later stages leave out (`repair`), and the checks run
even after errors; only a file that cannot be read or parsed as YAML stops it early, and only the
build needs a file without errors:

1. read: the source (a path, or YAML text) parsed with positions (`units`, `positions`);
2. model: validated against the file model the registry builds from the node kinds (`units`,
   `schema_errors`), giving one `Unit` per file (`records`);
3. expand: subtrees and named trees into `NodeRecord`s (`expand`): include cycles, missing files;
4. check: the state model (`state_model`), the tools (`tools_config`), every node's state keys
   and tools (`analysis`), every tool step's arguments against its tool's JSON Schema
   (`argument_checks`), then the graph checks (`checks`);
5. build: the py_trees behaviours through the registry's kinds (`build`, `context`), then the
   `Tree` (`tree`).

The shared types (`diagnostics`, `records`, `node_facts`, `context`, `catalog`) import none of
the stages; the built-in kinds register themselves when `kinds` is imported, here.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from jianmu_bt.loader import kinds  # noqa: F401  (importing it registers the built-in kinds)
from jianmu_bt.loader.analysis import analyze
from jianmu_bt.loader.argument_checks import check_arguments
from jianmu_bt.loader.bulk import paused_gc
from jianmu_bt.loader.catalog import ToolCatalog
from jianmu_bt.loader.checks import check_tree
from jianmu_bt.loader.context import BuildContext
from jianmu_bt.loader.diagnostics import Diagnostic, TreeLoadError, sort_diagnostics
from jianmu_bt.loader.expand import Expander
from jianmu_bt.loader.records import NodeRecord, Unit
from jianmu_bt.loader.registry import models
from jianmu_bt.loader.repair import drop_placeholders
from jianmu_bt.loader.state_model import StateInfo, build_state
from jianmu_bt.loader.tools_config import resolve_tools
from jianmu_bt.loader.units import TEXT_SOURCE, UnitLoader, display_name
from jianmu_bt.tools import Tool, ToolProvider, ToolSet

if TYPE_CHECKING:  # what only a load (not a validation) needs is imported when it runs
    import py_trees

    from jianmu_bt.guard import GuardEnforcer
    from jianmu_bt.llm import LLMProvider
    from jianmu_bt.loader.tree import Tree

_MAX_INLINE_PATH = 4096


class LoadOptions(TypedDict, total=False):
    """The keyword arguments of `load_tree` and `validate_source`, every one optional.

    `tools` are Python tools available by name to the file (beating same-named built-ins);
    `providers` add tools when the tree starts; `llm` and `guard` replace the file's own.
    `base_dir` resolves subtree files and `module:attr` imports of YAML text (default: the
    file's folder, or the working directory for text). `check=False` skips the graph checks
    (`checks`: reachability, reads before writes, ...) only: the analysis and the argument
    checks still run, as what they find would fail at run time (a missing or mistyped tool
    argument, a `behaviour` class's unknown argument).
    """

    tools: Iterable[Tool] | ToolSet | None
    providers: Iterable[ToolProvider] | None
    llm: LLMProvider | None
    guard: GuardEnforcer | None
    base_dir: Path | None
    check: bool


def _known_options(function: str, options: Mapping[str, object]) -> None:
    """TypeError for a keyword argument `function` does not take (as Python would raise)."""
    for name in options:
        if name not in LoadOptions.__optional_keys__:
            raise TypeError(f"{function}() got an unexpected keyword argument '{name}'")


@dataclass
class _Loaded:
    """Everything the pipeline produced (parts are None after a fatal error)."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    unit: Unit | None = None
    records: dict[str, NodeRecord] = field(default_factory=dict)
    root_id: str | None = None
    state: StateInfo | None = None
    catalog: ToolCatalog | None = None
    context: BuildContext | None = None
    root: py_trees.behaviour.Behaviour | None = None
    digest: str = ""
    llm: LLMProvider | None = None
    guard: GuardEnforcer | None = None

    @property
    def failed(self) -> bool:
        return any(d.is_error for d in self.diagnostics)


def _locate_source(source: str | Path, base_dir: Path | None) -> tuple[Path | None, str | None]:
    """`(path, None)` for a file, `(None, text)` for YAML text."""
    if isinstance(source, Path):
        return source, None
    if not isinstance(source, str):
        raise TypeError(f"source must be a path or YAML text, got {type(source).__name__}")
    one_line = (
        "\n" not in source and len(source) < _MAX_INLINE_PATH and not any(c in source for c in "{[")
    )
    if one_line:
        candidate = Path(source)
        if base_dir is not None and not candidate.is_absolute():
            candidate = base_dir / candidate
        if candidate.is_file() or source.endswith((".yaml", ".yml")):
            return candidate, None
    return None, source


def _run_pipeline(
    source: str | Path, options: LoadOptions, *, analysis_only: bool = False, build: bool = True
) -> _Loaded:
    base_dir = options.get("base_dir")
    out = _Loaded(llm=options.get("llm"), guard=options.get("guard"))
    loader = UnitLoader()
    path, text = _locate_source(source, base_dir)
    if path is not None:
        unit, reason = loader.load_file(path)
        if reason is not None:
            name = display_name(path)
            out.diagnostics.append(Diagnostic(name, 1, 1, "error", reason, "file-error"))
            return out
    else:
        unit = loader.load_text(text or "", TEXT_SOURCE, base_dir or Path.cwd())
    out.unit = unit
    if unit is None:
        out.diagnostics += loader.diagnostics
        return out

    expander = Expander(unit, loader)
    out.root_id = expander.expand()
    out.records = expander.records
    if build and not analysis_only:  # a load's: a durable run compares it
        out.digest = tree_digest(expander.units)
    out.diagnostics += loader.diagnostics + expander.diagnostics
    out.state, problems = build_state(expander.states, tree_name(unit))
    out.diagnostics += problems
    out.catalog, problems = resolve_tools(
        expander.units, options.get("tools"), options.get("providers"), loader.repairs
    )
    out.diagnostics += problems
    if not analysis_only:  # (the file's LLM provider and guard are made here)
        out.diagnostics += _services(out, unit)
    if out.root_id is None:
        return out
    # Every later stage runs even after errors (so one run lists every problem of the file); a
    # node the model stage refused is left out of them (`drop_placeholders`), and only the build
    # needs a file without errors.
    root_id = drop_placeholders(out.records, out.root_id, loader.repairs)
    if root_id is None:
        return out
    out.diagnostics += analyze(out.records, out.state, out.catalog)
    if analysis_only:
        return out
    out.diagnostics += check_arguments(out.records, out.state, out.catalog)
    if options.get("check", True):
        out.diagnostics += check_tree(out.records, root_id, out.state, out.catalog)
    repair = loader.repairs.get(unit.key)
    refused_llm = (repair is not None and "llm" in repair.settings) or any(
        d.code == "llm-config" for d in out.diagnostics
    )
    if not refused_llm:  # else the file's `llm:` is reported already, not missing
        out.diagnostics += _llm_needed(out)
    if out.failed or not build:
        return out
    from jianmu_bt.loader.build import build_behaviours  # py_trees and the nodes: a load only

    out.context = BuildContext(out.catalog)
    out.root, problems = build_behaviours(out.records, out.root_id, out.context)
    out.diagnostics += problems
    return out


def tree_digest(units: Iterable[Unit]) -> str:
    """A digest of what a tree's files say (their parsed data: comments and layout do not
    count), so a durable run can tell whether it is resumed with the tree it began with."""
    payload = [unit.data for unit in units]  # in expansion order; paths may differ by machine
    # (The parser refuses a recursive alias: the data has no cycle to look for.)
    text = json.dumps(
        payload, sort_keys=True, separators=(",", ":"), default=str, check_circular=False
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _services(out: _Loaded, unit: Unit) -> list[Diagnostic]:
    problems = []
    if out.llm is None and unit.model.llm is not None:
        from jianmu_bt.llm import LLMConfigurationError, provider_from_config

        try:
            out.llm = provider_from_config(unit.model.llm)
        except LLMConfigurationError as exc:
            line, col = unit.at(("llm",), key=True)
            problems.append(Diagnostic(unit.file, line, col, "error", str(exc), "llm-config"))
    if out.guard is None and unit.model.guard is not None:
        from jianmu_bt.guard import GuardConfigError, GuardEnforcer

        try:
            out.guard = GuardEnforcer.from_config(unit.model.guard)
        except GuardConfigError as exc:
            line, col = unit.at(("guard",), key=True)
            problems.append(Diagnostic(unit.file, line, col, "error", str(exc), "guard-config"))
    return problems


def _llm_needed(out: _Loaded) -> list[Diagnostic]:
    if out.llm is not None:
        return []
    for record in out.records.values():
        own = getattr(record.config, "llm", None) if record.kind == "agent" else None
        if record.kind in ("llm", "agent") and own is None:
            return [
                record.diagnostic(
                    f"'{record.name}' needs an LLM, and the tree has none: add `llm:` to the "
                    "file (e.g. {provider: scripted, replies: [...]}) or pass llm= to load_tree",
                    "no-llm",
                    severity="warning",
                )
            ]
    return []


def tree_name(unit: Unit) -> str:
    """The tree's name: the file's `name`, else the file's stem, else "tree"."""
    if unit.model.name:
        return unit.model.name
    if unit.path is not None:
        return unit.path.stem
    return "tree"


def load_tree(source: str | Path, **options: Unpack[LoadOptions]) -> Tree:
    """Load a YAML tree (a file path, or YAML text) into a runnable Tree.

    The options (`tools`, `providers`, `llm`, `guard`, `base_dir`, `check`) are `LoadOptions`.
    Raises TreeLoadError listing every error (and the warnings) with `file:line:col`.
    """
    _known_options("load_tree", options)
    with paused_gc():  # bulk construction: see `bulk`
        return _load(source, options)


def _load(source: str | Path, options: LoadOptions) -> Tree:
    from jianmu_bt.loader.session import LoadedRunner, ProviderSession
    from jianmu_bt.loader.tree import Tree
    from jianmu_bt.runtime.state import StateManager
    from jianmu_bt.sandbox.bound import RunnerBoundTool

    out = _run_pipeline(source, options)
    if out.failed or out.root is None:
        if not out.failed:  # cannot happen: a pipeline without a root reported why
            out.diagnostics.append(Diagnostic(TEXT_SOURCE, 1, 1, "error", "no tree built", "x"))
        raise TreeLoadError(out.diagnostics)
    assert out.unit is not None and out.state is not None and out.context is not None
    assert out.catalog is not None
    state = StateManager(out.state.model)
    services: dict[str, Any] = {}
    if out.llm is not None:
        services["llm"] = out.llm
    if out.guard is not None:
        services["guard"] = out.guard
    if out.unit.model.limits is not None:
        services["limits"] = out.unit.model.limits
    owned = [*out.context.owned_llms, *out.catalog.owned_llms, *out.context.owned_runners]
    if out.llm is not None and options.get("llm") is None:
        owned.append(out.llm)  # made from the file: the tree closes it
    owned += [t for t in out.catalog.tools.values() if isinstance(t, RunnerBoundTool)]  # runners
    session = ProviderSession(out.catalog, out.context.bindings)
    runner = LoadedRunner(out.root, state, services=services, session=session, owned=owned)
    guards = [g for g in (out.guard, *out.context.guards) if g is not None]
    # The Tree keeps what runs need, not the load's data (the parsed files, their positions and
    # node configs): its model keeps the file's settings, its nodes are the built behaviours.
    return Tree(
        name=tree_name(out.unit),
        path=out.unit.path,
        model=out.unit.model.model_copy(update={"root": None, "trees": {}}),
        root=out.root,
        state=state,
        state_info=out.state.released(),
        runner=runner,
        findings=sort_diagnostics(out.diagnostics),
        guards=guards,
        digest=out.digest,
    )


def validate_source(source: str | Path, **options: Unpack[LoadOptions]) -> list[Diagnostic]:
    """Every error and warning of a tree source, sorted; never raises for a problem in it.

    It takes the options of `load_tree` (`LoadOptions`) and runs the same stages but the last:
    every check is made before the build, so nothing the build would refuse goes unreported,
    and py_trees and the nodes are not even imported.
    """
    _known_options("validate_source", options)
    with paused_gc():
        return sort_diagnostics(_run_pipeline(source, options, build=False).diagnostics)


def analyse_nodes(source: str | Path, **options: Unpack[LoadOptions]) -> dict[str, NodeRecord]:
    """Each node's record by id, through the analysis stage only (`record.io`: the state keys
    it reads and writes; `record.unit`: its file): nothing is built, no LLM or guard is made."""
    _known_options("analyse_nodes", options)
    with paused_gc():
        return _run_pipeline(source, options, analysis_only=True).records


def format_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a tree file, for editors and `jianmu schema`."""
    schema = copy.deepcopy(models().file.model_json_schema(by_alias=True))
    defs = schema.get("$defs", {})
    invalid = {name for name in defs if name in ("InvalidNode", "InvalidToolEntry")}
    for name in invalid:
        defs.pop(name)
    refs = {f"#/$defs/{name}" for name in invalid}

    def prune(value: Any) -> Any:
        if isinstance(value, dict):
            for key in ("oneOf", "anyOf"):
                if key in value:
                    value[key] = [v for v in value[key] if v.get("$ref") not in refs]
            return {k: prune(v) for k, v in value.items()}
        if isinstance(value, list):
            return [prune(v) for v in value]
        return value

    schema = prune(schema)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **schema,
        "description": "A jianmu_bt behaviour tree file (YAML). Nodes are one-key mappings "
        "{kind: config}; kinds: " + ", ".join(models().wrappers) + ".",
    }


__all__ = ["LoadOptions", "format_json_schema", "load_tree", "tree_name", "validate_source"]

"""Overlay files: a small YAML format for `Overlay`, read with the loader's positions.

```yaml
version: 1
description: the research tree, offline
llm:                                  # every LLM turn of the tree: a scripted model
  replies:
    - tool_calls: [{name: http_request, arguments: {url: "https://example.org/"}}]
    - "Example Domain is a page for examples."
tools:                                # by tool name: every node using the tool
  http_request:
    calls:                            # a recording: each call once, matched by arguments
      - arguments: {url: "https://example.org/"}
        result: {status: 200, body: "<h1>Example Domain</h1>"}
  calculator: {result: "42"}          # a stub: the same output every call
  read_file: {error: "no such file"}  # a stub: the same failure every call
  word_count: {function: "fakes:count_words"}   # a Python function, module next to this file
nodes:                                # by node id, name or glob pattern
  Warmup: {result: "1024"}            # a tool step: its tool
  Assistant:                          # an agent, llm or executor node: its model and tools
    llm: {replies: ["done"]}
    tools: {calculator: {result: "0"}}
```
Problems are reported as `file:line:col: error: message`, every one of a stage at once: the
file's form first (unknown keys), then, once the form is sound, `function:` references,
scripted replies and tool names that differ only in case, and, when the overlay is applied,
every rule that names a tool or node the tree does not have.
`function:` references (`module:attr`) are imported with the overlay file's folder on the path.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from jianmu_bt.loader.diagnostics import Diagnostic
from jianmu_bt.loader.positions import SourceMap, parse_yaml
from jianmu_bt.loader.schema_errors import validation_diagnostics
from jianmu_bt.loader.units import display_name, read_source
from jianmu_bt.testing.overlay import NodeRule, Overlay, OverlayError, Where
from jianmu_bt.testing.overlay_rules import as_llm, clash_message
from jianmu_bt.testing.substitutes import FunctionSubstitute, Recorded, Stub, Substitute
from jianmu_bt.tools.references import ReferenceProblem, resolve_reference

_SUBSTITUTE_KEYS = ("result", "error", "calls", "function")


class CallSpec(BaseModel):
    """One recorded call: `result` or `error`, and optionally its `arguments`."""

    model_config = ConfigDict(extra="forbid")

    arguments: Any = None
    result: Any = None
    error: str | None = None

    @model_validator(mode="after")
    def _one_outcome(self) -> CallSpec:
        if ("result" in self.model_fields_set) == ("error" in self.model_fields_set):
            raise ValueError("a recorded call has either `result` or `error`")
        return self


class SubstituteSpec(BaseModel):
    """A tool's substitute: exactly one of `result`, `error`, `calls`, `function`."""

    model_config = ConfigDict(extra="forbid")

    result: Any = None
    error: str | None = None
    calls: list[CallSpec] | None = None
    function: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> SubstituteSpec:
        given = [k for k in _SUBSTITUTE_KEYS if k in self.model_fields_set]
        if len(given) != 1 and not self._node_keys():
            raise ValueError(
                "give exactly one of result, error, calls, function"
                + (f" (got {', '.join(given)})" if given else "")
            )
        return self

    def _node_keys(self) -> bool:
        return False


class LLMSpec(BaseModel):
    """The model of LLM turns: scripted `replies`, or a reply `function` (module:attr)."""

    model_config = ConfigDict(extra="forbid")

    replies: list[str | dict[str, Any]] | None = None
    function: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> LLMSpec:
        if (self.replies is None) == (self.function is None):
            raise ValueError("give exactly one of replies, function")
        return self


class NodeSpec(SubstituteSpec):
    """A node's rule: a substitute (a tool step), or `llm` and/or `tools` (agent, llm, executor)."""

    llm: LLMSpec | None = None
    tools: dict[str, SubstituteSpec] | None = None

    def _node_keys(self) -> bool:
        given = [k for k in _SUBSTITUTE_KEYS if k in self.model_fields_set]
        model = self.llm is not None or self.tools is not None
        if model and given:
            raise ValueError(
                f"give a substitute ({', '.join(given)}) for a tool step, or llm/tools for an "
                "agent, llm or executor node, not both"
            )
        return model


class OverlayFile(BaseModel):
    """The top level of an overlay file."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    description: str | None = None
    llm: LLMSpec | None = None
    tools: dict[str, SubstituteSpec] = {}
    nodes: dict[str, NodeSpec] = {}


class _Builder:
    """Turns a validated file into an Overlay, collecting located problems."""

    def __init__(self, source: SourceMap, base_dir: Path) -> None:
        self.source = source
        self.base_dir = base_dir
        self.problems: list[Diagnostic] = []

    def problem(self, path: tuple[str | int, ...], message: str, code: str) -> None:
        line, col = self.source.value(path)
        self.problems.append(Diagnostic(self.source.file, line, col, "error", message, code))

    def function(self, spec: str, path: tuple[str | int, ...]) -> Any:
        try:
            value = resolve_reference(spec, [self.base_dir])
        except ReferenceProblem as exc:
            self.problem(path, str(exc), "overlay-function")
            return None
        if not callable(value):
            self.problem(
                path, f"'{spec}' is a {type(value).__name__}, not a function", "overlay-function"
            )
            return None
        return value

    def substitute(self, spec: SubstituteSpec, path: tuple[str | int, ...]) -> Substitute | None:
        fields = spec.model_fields_set
        if "result" in fields:
            return Stub(spec.result)
        if "error" in fields:
            return Stub(error=spec.error)
        if spec.calls is not None:
            return Recorded(
                {
                    **({"arguments": c.arguments} if "arguments" in c.model_fields_set else {}),
                    **({"result": c.result} if "result" in c.model_fields_set else {}),
                    **({"error": c.error} if "error" in c.model_fields_set else {}),
                }
                for c in spec.calls
            )
        function = self.function(spec.function or "", (*path, "function"))
        return None if function is None else FunctionSubstitute(function)

    def llm(self, spec: LLMSpec, path: tuple[str | int, ...]) -> Any:
        from jianmu_bt.llm import InvalidRequestError

        if spec.function is not None:
            function = self.function(spec.function, (*path, "function"))
            return None if function is None else as_llm(function)
        try:
            return as_llm(spec.replies or [])
        except InvalidRequestError as exc:
            self.problem((*path, "replies"), f"llm: {exc}", "overlay-llm")
            return None

    def tools(
        self, specs: Mapping[str, SubstituteSpec], path: tuple[str | int, ...]
    ) -> dict[str, Substitute]:
        found: dict[str, Substitute] = {}
        spelled: dict[str, str] = {}
        for name, spec in specs.items():
            first = spelled.setdefault(name.lower(), name)
            if first != name:
                first_line = self.source.key((*path, first))[0]
                message = f"{clash_message(first, name)} (the first is on line {first_line})"
                line, col = self.source.key((*path, name))
                self.problems.append(
                    Diagnostic(
                        self.source.file, line, col, "error", message, "overlay-duplicate-tool"
                    )
                )
                continue
            made = self.substitute(spec, (*path, name))
            if made is not None:
                found[name.lower()] = made
        return found


def overlay_from_data(
    data: Any,
    *,
    file: str = "<overlay>",
    base_dir: Path | None = None,
    source: SourceMap | None = None,
) -> Overlay:
    """An Overlay from the data of an overlay file (OverlayError listing every problem)."""
    source = source or SourceMap(file)
    base = base_dir or Path.cwd()
    if not isinstance(data, dict):
        what = type(data).__name__ if data is not None else "nothing"
        message = f"an overlay file is a mapping (version, llm, tools, nodes), got {what}"
        raise OverlayError([Diagnostic(file, 1, 1, "error", message, "not-an-overlay")])
    try:
        model = OverlayFile.model_validate(data)
    except ValidationError as exc:
        raise OverlayError(validation_diagnostics(exc, data, source, OverlayFile)) from None
    builder = _Builder(source, base)
    tools = builder.tools(model.tools, ("tools",))
    llm = builder.llm(model.llm, ("llm",)) if model.llm is not None else None
    nodes: dict[str, NodeRule] = {}
    for key, spec in model.nodes.items():
        path: tuple[str | int, ...] = ("nodes", key)
        if spec.llm is None and spec.tools is None:
            made = builder.substitute(spec, path)
            if made is not None:
                nodes[key] = NodeRule(substitute=made)
            continue
        nodes[key] = NodeRule(
            llm=builder.llm(spec.llm, (*path, "llm")) if spec.llm is not None else None,
            tools=builder.tools(spec.tools or {}, (*path, "tools")),
        )
    if builder.problems:
        raise OverlayError(builder.problems)
    where: dict[tuple[str, ...], Where] = {}
    for group, keys in (("tools", model.tools), ("nodes", model.nodes)):
        for key in keys:
            where[(group, key.lower() if group == "tools" else key)] = (
                file,
                *source.key((group, key)),
            )
    return Overlay(tools=tools, llm=llm, nodes=nodes, where=where, name=file)


def load_overlay(path: str | Path) -> Overlay:
    """The Overlay of a YAML overlay file (OverlayError with located problems when broken)."""
    path = Path(path)
    file = display_name(path)
    text, problem = read_source(path, "overlay file")
    if text is None:
        reason, code = (str(problem), problem.code) if problem else (file, "file-error")
        raise OverlayError([Diagnostic(file, 1, 1, "error", reason, code)])
    data, source, problems = parse_yaml(text, file)
    if problems:
        raise OverlayError(problems)
    if data is None:
        raise OverlayError([Diagnostic(file, 1, 1, "error", "the file is empty", "empty-file")])
    return overlay_from_data(data, file=file, base_dir=path.resolve().parent, source=source)


__all__ = ["OverlayFile", "load_overlay", "overlay_from_data"]

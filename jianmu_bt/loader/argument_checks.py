"""Tool arguments checked against each tool's JSON Schema, before anything runs.

For every `tool` step whose tool is known at load time (built-ins, Python tools; an MCP server's
tools are known only once it started, so they are skipped), the step's fixed `arguments` (or the
state field its `input_key` names) are compared with the tool's `parameters` schema:

| finding | code | severity |
|---|---|---|
| a required argument not given | `missing-argument` | error |
| an argument a closed schema does not list | `unknown-argument` | error |
| an argument an open schema does not list | `unknown-argument` | warning |
| a literal the schema refuses (type) | `argument-type` | error |
| a literal the schema refuses (enum, const, range, length, ...) | `argument-value` | error |
| a state value whose declared type the parameter refuses | `argument-type` | error |
| text where a number is wanted, a number where an integer is | `argument-type-maybe` | warning |

Literal values go through a real JSON Schema validator (`jsonschema`), whose messages are
turned into plain ones located at the value itself. A value holding `{key}` references is
checked by the referenced field's declared type instead (see `argument_flow`).
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from jianmu_bt.loader.analysis import reference_position
from jianmu_bt.loader.argument_flow import (
    accepted_types,
    describe_value,
    flow_of,
    json_type_of,
    plain_type_schema,
    state_json_type,
    type_phrase,
    type_problem,
    verdict,
)
from jianmu_bt.loader.behaviour_args import check_behaviour_args
from jianmu_bt.loader.catalog import ToolCatalog
from jianmu_bt.loader.diagnostics import Diagnostic, Severity, quote_list
from jianmu_bt.loader.model import BehaviourConfig, ToolStepConfig
from jianmu_bt.loader.positions import Path
from jianmu_bt.loader.records import NodeRecord
from jianmu_bt.loader.state_model import StateInfo
from jianmu_bt.tools.call_context import IDEMPOTENCY_PARAMETER
from jianmu_bt.tools.references import did_you_mean

if TYPE_CHECKING:
    from jianmu_bt.tools import Tool

_INJECTED = frozenset({IDEMPOTENCY_PARAMETER})  # filled in by the node itself at run time


def _is_function_tool(tool: Tool) -> bool:
    """Whether `tool` is a `FunctionTool` (an `@tool` function), without importing its module
    (and its docstring parser) to ask: when that module is not loaded, no such tool exists."""
    module = sys.modules.get("jianmu_bt.tools.function_tool")
    return module is not None and isinstance(tool, module.FunctionTool)


def check_arguments(
    records: Mapping[str, NodeRecord], state: StateInfo, catalog: ToolCatalog
) -> list[Diagnostic]:
    """Every argument problem of the tree's tool steps (and `behaviour` nodes' `args`, see
    `behaviour_args`), located at the argument."""
    schemas = _Schemas()
    found: list[Diagnostic] = []
    for record in records.values():
        config = record.config
        if isinstance(config, BehaviourConfig):
            found += check_behaviour_args(record, config)
            continue
        if not isinstance(config, ToolStepConfig):
            continue
        tool = catalog.get(config.tool)
        if tool is None:  # unknown or unavailable: the analysis said so; a provider's: later
            continue
        found += _StepCheck(record, config, tool, state, schemas).run()
    return found


class _Schemas:
    """Each tool's parameters schema and a validator for it, made once per load."""

    def __init__(self) -> None:
        self._parameters: dict[int, dict[str, Any]] = {}
        self._validators: dict[int, Any] = {}
        self.missing: str | None = None  # why literals cannot be checked here, once said
        self.said_missing = False

    def parameters(self, tool: Tool) -> dict[str, Any]:
        found = self._parameters.get(id(tool))
        if found is None:
            try:
                schema = tool.to_schema().get("parameters")
            except Exception:  # a tool that cannot describe itself: nothing to check against
                schema = None
            found = schema if isinstance(schema, dict) else {}
            self._parameters[id(tool)] = found
        return found

    def validator(self, tool: Tool) -> Any:
        """A jsonschema validator of the tool's parameters (None when it cannot be made)."""
        if id(tool) not in self._validators:
            try:  # a dependency, imported only when some literal argument is to be checked
                from jianmu_bt.loader.json_schema import make_validator
            except ImportError as exc:
                self.missing = f"the jsonschema package cannot be imported ({exc})"
                return None
            self._validators[id(tool)] = make_validator(self.parameters(tool))
        return self._validators[id(tool)]


class _StepCheck:
    """The checks of one tool step."""

    def __init__(
        self,
        record: NodeRecord,
        config: ToolStepConfig,
        tool: Tool,
        state: StateInfo,
        schemas: _Schemas,
    ) -> None:
        self.record = record
        self.config = config
        self.tool = tool
        self.state = state
        self.schemas = schemas
        self.params = schemas.parameters(tool)
        self.wrapped = tool.input_schema.get("type") != "object"
        self.found: list[Diagnostic] = []

    # -- what the step passes --------------------------------------------------------------

    def run(self) -> list[Diagnostic]:
        config = self.config
        arguments = config.arguments
        if config.input_key is not None:
            self._input_key(config.input_key)
        elif arguments is None:
            # A tool of the default one-string input given nothing runs with an empty input
            # (its `run` gets {}): a tool that needs no input, not a missing argument.
            if not (self.wrapped and self.tool.input_schema.get("type") == "string"):
                self._named({}, ("arguments",))
        elif isinstance(arguments, Mapping) and (not self.wrapped or "input" in arguments):
            self._named(arguments, ("arguments",))
        elif self.wrapped:  # the value is the tool's whole input
            self._named({"input": arguments}, ("arguments",), bare=True)
        else:
            self._whole_input(arguments)
        return self.found

    def _bare_target(self, json_type: str) -> str | None:
        """The parameter a bare (non-mapping) value of `json_type` fills, if the tool has one:
        a built-in's `primary_argument` takes text, a one-parameter function tool anything."""
        primary = getattr(self.tool, "primary_argument", None)
        if isinstance(primary, str):
            return primary if json_type == "string" else None
        props = self.params.get("properties")
        if _is_function_tool(self.tool) and isinstance(props, dict) and len(props) == 1:
            return str(next(iter(props)))
        return None

    def _input_key(self, key: str) -> None:
        """The arguments are a state field's value: its type must fit what the tool takes."""
        facts = self.state.fields.get(self.record.keys(key))
        if facts is None or facts.type == "any":
            return
        given = state_json_type(facts.type)
        if self.wrapped:
            wanted = accepted_types(self.tool.input_schema, self.tool.input_schema)
        elif given == "object" or self._bare_target(given) is not None:
            return  # named arguments, or the value of the one argument (checked at run time)
        else:
            wanted = {"object"}
        if verdict({given}, wanted) == "no":
            self._report(
                f"{self._label()} takes {type_phrase(wanted)}, but `input_key` '{key}' is "
                f"{_a(facts.type)} field",
                "argument-type",
                ("input_key",),
                hint="use `arguments:` with {key} references, or a field of the right type",
            )

    def _whole_input(self, value: Any) -> None:
        """`arguments` that is not a mapping, for a tool that takes named arguments: the value
        of its one (or primary) argument, else a mistake."""
        flow = flow_of(value)
        given = json_type_of(value) if flow is None or flow.whole is None else "any"
        got = describe_value(value)
        if flow is not None and flow.whole is not None:
            facts = self.state.fields.get(self.record.keys(flow.whole))
            if facts is None or facts.type in ("any", "dict") or flow.dotted:
                return  # unknown here, or a mapping of arguments
            given = state_json_type(facts.type)
            got = f"the state key '{flow.whole}', {_a(facts.type)} field"
        target = self._bare_target(given)
        if target is not None:
            self._named({target: value}, ("arguments",), bare=True)
            return
        self._report(
            f"{self._label()} takes named arguments (a mapping), but `arguments` is {got}",
            "argument-type",
            ("arguments",),
            hint=f"write `arguments: {{{self._first_param()}: ...}}`",
        )

    def _named(self, arguments: Mapping[Any, Any], at: Path, *, bare: bool = False) -> None:
        props = self.params.get("properties")
        props = props if isinstance(props, dict) else {}
        closed = self.params.get("additionalProperties", True) is False
        literal: dict[str, Any] = {}
        meant: set[str] = set()  # required names an unknown one is taken for (one finding)
        for name, value in arguments.items():
            key = str(name)
            where: Path = at if bare else (*at, key)
            schema = props.get(key)
            if schema is None:
                meant.update(self._unknown(key, props, closed, where))
                continue
            if flow_of(value) is None:
                literal[key] = value
            else:
                self._flow(key, value, schema, where)
        self._missing(arguments, at, meant)
        self._literals(literal, props, at, bare=bare)

    # -- the findings ----------------------------------------------------------------------

    def _unknown(self, key: str, props: dict[str, Any], closed: bool, where: Path) -> list[str]:
        """Report an argument the schema does not list; the name it is close to, if any."""
        if not props and not closed:
            return []  # a schema that lists nothing takes anything
        names = [n for n in props if n not in _INJECTED]
        close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
        self._report(
            f"{self._label()} has no argument '{key}'{did_you_mean(key, names)}",
            "unknown-argument",
            where,
            key=True,
            hint=f"its arguments: {quote_list(names)}"
            + ("" if closed else " (the tool may ignore others)"),
            severity="error" if closed else "warning",
        )
        return close

    def _missing(self, arguments: Mapping[Any, Any], at: Path, meant: set[str]) -> None:
        required = self.params.get("required")
        if not isinstance(required, list):
            return
        at_key: Path = at if self.record.unit.source.has(self.record.config_path(*at)) else ()
        for name in (n for n in required if isinstance(n, str)):
            if name in arguments or name in _INJECTED or name in meant:
                continue  # given, filled in by the node, or misspelt (reported as unknown)
            props = self.params.get("properties")
            schema = props.get(name) if isinstance(props, dict) else None
            about = schema.get("description") if isinstance(schema, dict) else None
            self._report(
                f"{self._label()} needs the argument '{name}'",
                "missing-argument",
                at_key or ("tool",),
                key=True,
                hint=f"add `{name}: ...` under `arguments:`" + (f" ({about})" if about else ""),
            )

    def _literals(
        self, literal: dict[str, Any], props: dict[str, Any], at: Path, *, bare: bool
    ) -> None:
        rich: dict[str, Any] = {}
        for key, value in literal.items():
            schema = props.get(key)
            if not plain_type_schema(schema):
                rich[key] = value
                continue
            # a type alone is judged here: no validator to import for the common case
            problem = type_problem(f"argument '{key}'", accepted_types(schema, {}) or set(), value)
            if problem is not None:
                where: Path = at if bare else (*at, key)
                message, hint = problem
                self._report(f"{self._label()}: {message}", "argument-type", where, hint=hint)
        if rich:
            self._validated(rich, at, bare=bare)

    def _validated(self, literal: dict[str, Any], at: Path, *, bare: bool) -> None:
        """Literals checked by the JSON Schema validator (every keyword of their schemas)."""
        validator = self.schemas.validator(self.tool)
        if validator is None:
            if self.schemas.missing and not self.schemas.said_missing:
                self.schemas.said_missing = True
                self._report(
                    f"literal tool arguments are not checked: {self.schemas.missing}",
                    "arguments-unchecked",
                    at,
                    hint="pip install 'jsonschema>=4.18' (a dependency of jianmu-bt)",
                    severity="warning",
                )
            return
        from jianmu_bt.loader.json_schema import plain_errors

        for problem in plain_errors(validator, literal):
            where: Path = at if bare else (*at, *problem.path)
            self._report(
                f"{self._label()}: {problem.message}",
                problem.code,
                where,
                hint=problem.hint,
            )

    def _flow(self, key: str, value: Any, schema: dict[str, Any], where: Path) -> None:
        """A value holding `{key}` references, checked by the state types that flow into it."""
        flow = flow_of(value)
        assert flow is not None
        accepted = accepted_types(schema, self.params)
        if accepted is None:
            return
        if flow.whole is not None:
            if flow.dotted:
                return  # a path inside a value: its type is not declared
            facts = self.state.fields.get(self.record.keys(flow.whole))
            if facts is None or facts.type == "any":
                return  # an unknown key is the analysis' finding
            given = state_json_type(facts.type)
            source = f"'{{{flow.whole}}}' is the state key '{flow.whole}', {_a(facts.type)} field"
            hint = (
                f"declare '{flow.whole}' with a type that fits, or put the reference inside "
                f'text (e.g. "{{{flow.whole}}} ...") to pass it as a string'
                if "string" in accepted
                else f"declare '{flow.whole}' with a type that fits"
            )
        else:
            given = json_type_of(value)
            source = (
                "text with {key} references is a string"
                if given == "string"
                else f"it is {describe_value(value)}"
            )
            hint = "pass the value itself as `{key}` alone, so it keeps its type"
        found = verdict({given}, accepted)
        if found == "ok":
            return
        message = f"{self._label()}: argument '{key}' takes {type_phrase(accepted)}, but {source}"
        if found == "maybe":
            maybe = "text that is not a number" if given == "string" else "a fraction"
            self._report(
                message + f" (it fails at run time if it holds {maybe})",
                "argument-type-maybe",
                where,
                hint=hint,
                severity="warning",
                reference=flow.whole,
            )
            return
        self._report(message, "argument-type", where, hint=hint, reference=flow.whole)

    # -- helpers ---------------------------------------------------------------------------

    def _label(self) -> str:
        return f"tool '{self.tool.name}' (step '{self.record.name}')"

    def _first_param(self) -> str:
        props = self.params.get("properties")
        return next(iter(props), "name") if isinstance(props, dict) and props else "name"

    def _report(
        self,
        message: str,
        code: str,
        where: Path,
        *,
        key: bool = False,
        hint: str = "",
        severity: Severity = "error",
        reference: str | None = None,
    ) -> None:
        record = self.record
        if reference is not None:
            line, col = reference_position(record, where, reference)
        else:
            line, col = record.at(where, key=key)
        self.found.append(Diagnostic(record.unit.file, line, col, severity, message, code, hint))


def _a(word: str) -> str:
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"


__all__ = ["check_arguments"]

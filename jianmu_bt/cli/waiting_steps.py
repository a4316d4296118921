"""What a paused run waits for, as the command line shows it: one kind of step per way to go on.

A paused run's journal holds the steps it waits on (`jianmu_bt.cli.stores.waiting_calls`):

| kind | journal row | goes on with |
|---|---|---|
| `held` | a call the guard holds | `--approve CALL_ID`, `--deny`, `--edit`, `--respond` |
| `in_doubt` | a call running when the process died | `--approve CALL_ID` (run again), `--deny` |
| `question` | an `ask` step (status `waiting`) | `--answer QUESTION_ID=VALUE` |
| `external` | an external tool's call (status `waiting`) | `--result CALL_ID=JSON` |

`waiting_step` turns a row into the JSON-ready document `jianmu run --json`, `jianmu resume
--json` and `jianmu runs waiting` print; `step_line` and `continue_line` are the summary's lines.
Everything a step holds (arguments, question text) is shown whole and escaped.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from jianmu_bt.cli.call_text import arguments_text, call_summary, escape_hidden

if TYPE_CHECKING:
    from jianmu_bt.store import RunStore

#: The kinds of waiting steps, in the order the summary suggests how to go on.
KINDS = ("held", "in_doubt", "question", "external")
#: The option that gives each kind of step waiting for a value its value, and what it takes.
OPTIONS = (("question", "--answer", "..."), ("external", "--result", "JSON"))
#: Longest question text shown on one summary line (the JSON has all of it).
QUESTION_CHARS = 300


def step_kind(entry: Any) -> str:
    """`held`, `in_doubt`, `question` or `external` for a waiting journal row."""
    if entry.status in ("held", "in_doubt"):
        return str(entry.status)
    document = entry.result if isinstance(entry.result, Mapping) else {}
    return "question" if document.get("waiting") == "question" else "external"


def waiting_step(entry: Any) -> dict[str, Any]:
    """A waiting journal row as a JSON-ready document: `call_id` (a question's id for a
    question), `kind`, `tool`, `arguments`, `status` (the journal's), `node`, `schema` (what the
    value must fit: the answer's or the result's; None for a held call), `deadline` (epoch
    seconds, or None), and for a question its `question` text and `default` when it has one."""
    kind = step_kind(entry)
    document = entry.result if isinstance(entry.result, Mapping) else {}
    step: dict[str, Any] = {
        "call_id": entry.call_id,
        "kind": kind,
        "tool": entry.tool,
        # An external call is handed out as it was approved (a reviewer's edit included).
        "arguments": document.get("arguments", entry.arguments)
        if kind == "external"
        else entry.arguments,
        "status": entry.status,
        "node": entry.node,
        "schema": document.get("schema") if kind in ("question", "external") else None,
        "deadline": document.get("deadline"),
    }
    if kind == "question":
        step["question"] = document.get("question") or (entry.arguments or {}).get("question")
    default = document.get("default")
    if kind in ("question", "external") and isinstance(default, list) and default:
        step["default"] = default[0]
    if kind == "held" and document.get("reason"):
        step["reason"] = document.get("reason")
    return step


def schema_hint(schema: Any) -> str:
    """What an answer must be, in a few words: `one of: careful, fast`, `a whole number >= 1`,
    `an object with fields: a, b`, `text` (escaped; "" when the schema says nothing)."""
    if not isinstance(schema, Mapping):
        return ""
    choices = schema.get("enum")
    if isinstance(choices, list):
        return "one of: " + ", ".join(escape_hidden(str(choice)) for choice in choices)
    kind = schema.get("type")
    if kind == "object":
        fields = schema.get("properties") or {}
        names = ", ".join(escape_hidden(str(name)) for name in fields)
        return f"an object with fields: {names}" if names else "an object"
    words = {
        "string": "text",
        "integer": "a whole number",
        "number": "a number",
        "boolean": "true or false",
        "array": "a list",
    }
    shown = words.get(str(kind), "")
    bounds = [
        f"{sign} {schema[key]}"
        for key, sign in (("minimum", ">="), ("maximum", "<="))
        if key in schema and kind in ("integer", "number")
    ]
    return " ".join([shown, ", ".join(bounds)]).strip() if shown else ""


def deadline_text(deadline: Any) -> str:
    """A deadline (epoch seconds) as ISO 8601 UTC, "" when there is none."""
    if not isinstance(deadline, int | float):
        return ""
    when = datetime.datetime.fromtimestamp(deadline, datetime.UTC)
    return when.isoformat(timespec="seconds")


def step_text(step: Mapping[str, Any]) -> str:
    """What waits, on one line: a question's text and what its answer must be, or the call
    `tool({...})` whole; escaped."""
    if step["kind"] == "question":
        text = escape_hidden(" ".join(str(step.get("question") or "").split()))
        if len(text) > QUESTION_CHARS:
            text = f"{text[:QUESTION_CHARS]}... ({len(text) - QUESTION_CHARS} more characters)"
        hint = schema_hint(step.get("schema"))
        if "default" in step:
            default = arguments_text(step["default"], indent=None)
            hint = f"{hint}; default {default}" if hint else f"default {default}"
        shown = f"{text}  ({hint})" if hint else text
    else:
        shown = call_summary(step["tool"], step["arguments"])
    until = deadline_text(step.get("deadline"))
    return f"{shown}  (until {until})" if until else shown


def step_line(step: Mapping[str, Any]) -> str:
    """`  question  q_1a2b  Which plan?  (one of: careful, fast)`, `  waiting   call_3c4d
    ci_result({...})`, `  held      call_5e6f  pay({...})`."""
    word = "question" if step["kind"] == "question" else step["status"]
    return f"  {word:<8} {escape_hidden(step['call_id'])}  {step_text(step)}"


def paused_heading(run_id: str, steps: Sequence[Mapping[str, Any]]) -> str:
    """The summary's first line about a paused run: how many of each kind of step wait."""
    decided = sum(1 for step in steps if step["kind"] in ("held", "in_doubt"))
    if decided == len(steps):
        return f"Run {run_id} paused: {decided} call(s) wait for a decision"
    counts = [
        (decided, "call(s) wait for a decision"),
        (sum(1 for s in steps if s["kind"] == "question"), "question(s) wait for an answer"),
        (sum(1 for s in steps if s["kind"] == "external"), "external call(s) wait for a result"),
    ]
    return f"Run {run_id} paused: " + ", ".join(f"{n} {what}" for n, what in counts if n)


def continue_line(run_id: str, steps: Sequence[Mapping[str, Any]]) -> str:
    """`Continue with: jianmu resume RUN ...`: the options that give every question its answer
    and every external call its result, and decide the first call that waits for a decision."""
    first = {kind: next((s for s in steps if s["kind"] == kind), None) for kind in KINDS}
    options = [
        f"{option} {escape_hidden(step['call_id'])}={value}"
        for kind, option, value in OPTIONS
        for step in steps
        if step["kind"] == kind
    ]
    decided = first["held"] or first["in_doubt"]
    if decided is not None or not options:
        call_id = escape_hidden(decided["call_id"]) if decided is not None else "CALL_ID"
        options.append(f"--approve {call_id}  (or --deny {call_id})")
    return f"Continue with: jianmu resume {run_id} " + " ".join(options)


def run_waiting_steps(store: RunStore) -> list[dict[str, Any]]:
    """Every step the store's paused runs wait on, the runs oldest first, each step's document
    `{run_id, tree, kind, id, tool, node, arguments, question (a question's), schema, deadline,
    default (when there is one), reason (a held call's, when known)}`: what `jianmu runs
    waiting --json` prints, for a system that polls the store."""
    from jianmu_bt.cli.stores import waiting_calls

    found = []
    for run in reversed(store.runs()):
        if run.status != "paused":
            continue
        for entry in waiting_calls(store, run.run_id):
            step = waiting_step(entry)
            row = {"run_id": run.run_id, "tree": run.tree, "kind": step["kind"]}
            row["id"] = step.pop("call_id")
            step.pop("status")
            found.append({**row, **step})
    return found


def waiting_row_line(row: Mapping[str, Any]) -> str:
    """`RUN  TREE  KIND  ID  what waits`: one line of `jianmu runs waiting`, escaped."""
    step = {**row, "call_id": row["id"]}
    run, tree = escape_hidden(str(row["run_id"])), escape_hidden(str(row["tree"]))
    return f"{run}  {tree}  {row['kind']:<8}  {escape_hidden(str(row['id']))}  {step_text(step)}"

"""`jianmu resume --approve ask`: the person at the terminal answers the run's waiting questions.

Before the run goes on, each question the paused run waits on (an `ask` step) that the command
line did not answer is shown (the asking step, the question's text, what the answer must be: its
choices or type, and its default), everything escaped (`jianmu_bt.cli.desks.terminal_text`), and
the answer is read on one line:

- for a text question (`type: string`, choices included) the line is the answer as typed;
- for a yes/no question `y`/`n` (or `true`/`false`); for any other the line is read like
  `--answer` reads its value (JSON, else the text: `jianmu_bt.cli.supplied_values`);
- an empty line takes the default, when there is one.

The answer is checked against the question's schema (`value_problems`); a bad one is said in one
line and the question asked again. The question's block is part of the prompt (written where
`input` writes it), the problems and the list of external calls go to stderr. The end of input
leaves the question (and the rest) waiting. External calls are not asked about (their results
come from other systems): they are listed, with the option that gives a result.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from jianmu_bt.cli.call_text import escape_hidden
from jianmu_bt.cli.desks import is_no, is_yes, terminal_text
from jianmu_bt.cli.edited_arguments import EditTextError
from jianmu_bt.cli.supplied_values import answer_from_text
from jianmu_bt.cli.waiting_steps import deadline_text, schema_hint, step_text, waiting_step

#: Longest question text shown at the prompt.
QUESTION_CHARS = 2000
ANSWER_PROMPT = "  your answer: "

#: Reads a line typed at the terminal (None at the end of input).
Reader = Callable[[str], "str | None"]


class _EndOfInput(Exception):
    """The terminal's input ended: the questions left keep waiting."""


def ask_questions(
    steps: list[Any],
    answers: dict[str, Any],
    read: Reader,
    step_name: Callable[[str], str] = str,
) -> bool:
    """Ask at the terminal each waiting question (journal rows among `steps`) not answered in
    `answers` (filled in place: question id -> answer); list the external calls that wait.
    `step_name` names the step a node key stands for. False when the input ended: nobody is
    left to ask, so the run should pause on what still waits rather than ask again."""
    ended = False
    waiting = [waiting_step(entry) for entry in steps]
    try:
        for step in waiting:
            if step["kind"] == "question" and step["call_id"] not in answers:
                answers[step["call_id"]] = _answer(step, read, step_name(step["node"]))
    except _EndOfInput:
        _say("(input ended: the questions not answered keep waiting)")
        ended = True
    for step in waiting:
        if step["kind"] == "external" and step["call_id"] not in answers:
            call_id = escape_hidden(step["call_id"])
            _say(f"waiting for its result from outside: {call_id}  {step_text(step)}")
            _say(f"  (not asked here: give it with --result {call_id}=JSON)")
    return not ended


def _answer(step: Mapping[str, Any], read: Reader, name: str) -> Any:
    """Ask one question until the answer fits its schema."""
    from jianmu_bt.tools.external import value_problems

    schema = step.get("schema") or {}
    has_default = "default" in step
    prompt = f"{question_block(step, name)}\n{ANSWER_PROMPT}"
    while True:
        text, prompt = read(prompt), ANSWER_PROMPT
        if text is None:
            raise _EndOfInput
        if not text.strip():
            if has_default:
                return step["default"]
            _say("    an answer is required (this question has no default)")
            continue
        value, problem = typed_answer(schema, text)
        problems = [problem] if problem else value_problems(schema, value, "answer")
        if not problems:
            return value
        _say(f"    {terminal_text('; '.join(problems), 500)}")


def question_block(step: Mapping[str, Any], name: str) -> str:
    """What the person reads before answering: who asks, the question (escaped, its lines
    marked), what the answer must be and its default, and until when it waits."""
    asker = terminal_text(name, 100)
    lines = [f"The tree asks (step '{asker}') [{escape_hidden(step['call_id'])}]:"]
    lines.append("  " + terminal_text(step.get("question") or "", QUESTION_CHARS, multiline=True))
    hint = schema_hint(step.get("schema"))
    if hint:
        lines.append(f"  answer with {terminal_text(hint, 500)}")
    if "default" in step:
        shown = terminal_text(_shown(step["default"]), 200)
        lines.append(f"  an empty line takes the default: {shown}")
    until = deadline_text(step.get("deadline"))
    if until:
        lines.append(f"  it waits until {until}")
    return "\n".join(lines)


def typed_answer(schema: Mapping[str, Any], text: str) -> tuple[Any, str]:
    """The value a line typed for a question with `schema` stands for, or a problem."""
    kind = schema.get("type")
    if kind == "string" or (kind is None and isinstance(schema.get("enum"), list)):
        return text.strip(), ""
    if kind == "boolean" and (is_yes(text) or is_no(text)):
        return is_yes(text), ""
    try:
        return answer_from_text(text.strip()), ""
    except EditTextError as exc:
        return None, str(exc)


def _shown(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def read_line(prompt: str) -> str | None:
    """A line typed at the terminal; None when there is nothing more to read."""
    try:
        return input(prompt)
    except (EOFError, OSError):
        return None

"""Answering an MCP server's questions for a person from the command line (`--approve`).

A server may ask the run's user for input (MCP elicitation: a message and a flat form), and so
may the tree's own `ask` steps (shown as "The tree asks (step 'X'):"). The desk listens for
`input.requested` events and answers each question once, as `--approve` says:

- `ask`: the person at the terminal answers field by field, each typed by the form (text, whole
  number, number, yes/no, one of a list, some of a list), defaults shown in brackets and taken
  on an empty line, required fields insisted on, a bad value asked again with the reason;
- `all`: accepted with the form's defaults when every required field has one and they fit the
  form, else declined saying why;
- `none` (the default when stdin is not a terminal): declined at once, with the reason.

Everything the server wrote (message, titles, choices) is shown through `terminal_text`, so it
cannot move the cursor or fake a prompt.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from typing import Any, TextIO

from jianmu_bt.cli.desks import Once, is_no, is_yes, terminal_text
from jianmu_bt.runtime.question_forms import (
    FormField,
    content_problems,
    default_content,
    field_problems,
    form_fields,
)

NO_PERSON = "no person was available to answer (start the run with --approve ask)"
#: Longest title, description or choice label of a form shown at the terminal.
LABEL_CHARS = 200


class Dismissed(Exception):
    """The person ended the input (end of file): the question is cancelled."""


class Closed(Exception):
    """The question was closed elsewhere (timed out, withdrawn, answered) while it was asked."""


class QuestionDesk:
    """An event subscriber that answers questions (`input.requested` events) per `mode`.

    The run's questions are asked only while someone attends them: enter
    `tree.attend_questions()` for as long as the desk is subscribed (`jianmu run` does)."""

    def __init__(
        self,
        tree: Any,
        mode: str,
        *,
        ask: Callable[[str], str] = input,
        out: TextIO | None = None,
        terminal: threading.Lock | None = None,
    ) -> None:
        self.tree = tree
        self.mode = mode
        self.ask = ask
        self.out = out or sys.stderr
        #: One conversation at a time on the terminal (shared with the approval questions).
        self.terminal = terminal or threading.Lock()
        self._once = Once()

    def __call__(self, event: Any) -> None:
        """Answer the question an `input.requested` event announces (once; other events are
        ignored): at once for `all` and `none`, from a thread of its own for `ask`."""
        if event.type != "input.requested":
            return
        data = event.data
        question_id = data.get("question_id")
        if not self._once.first(question_id):
            return
        asker = f"{asker_text(data)} [{terminal_text(question_id, 100)}]"
        schema = data.get("schema") or {}
        if self.mode == "all":
            self._accept_defaults(question_id, asker, schema)
        elif self.mode == "none":
            self._answer(
                question_id, "decline", None, NO_PERSON, f"{asker}\n  declined: {NO_PERSON}"
            )
        else:
            threading.Thread(
                target=self._interview, args=(question_id, asker, schema), daemon=True
            ).start()

    def _accept_defaults(self, question_id: str, asker: str, schema: dict[str, Any]) -> None:
        """`--approve all`: the form's defaults when they make a valid answer, else decline."""
        content, missing = default_content(schema)
        if missing:
            reason = f"--approve all: no default for required field(s) {', '.join(missing)}"
        else:
            problems = content_problems(schema, content)
            reason = f"--approve all: the defaults do not fit the form: {'; '.join(problems)}"
            if not problems:
                shown = terminal_text(json.dumps(content, ensure_ascii=False, default=str))
                self._answer(question_id, "accept", content, "", f"{asker}\n  answered {shown}")
                return
        said = f"{asker}\n  declined: {terminal_text(reason)}"
        self._answer(question_id, "decline", None, reason, said)

    def _answer(
        self, question_id: str, action: str, content: Any, reason: str, said: str = ""
    ) -> None:
        by = "terminal" if self.mode == "ask" else f"--approve {self.mode}"
        try:
            self.tree.answer(question_id, action, content, reason=reason, by=by)
        except (KeyError, ValueError) as exc:  # closed meanwhile (timeout), or did not fit
            self._say(f"{question_id}: {terminal_text(exc)}")
            return
        if said:
            self._say(said)

    def _interview(self, question_id: str, asker: str, schema: dict[str, Any]) -> None:
        with self.terminal:
            try:
                self._still_open(question_id)  # it may have closed while the terminal was busy
                self._say(asker)
                choice = self._line("answer it? [y = answer, n = decline, c = cancel] ").lower()
                self._still_open(question_id)
                if is_yes(choice):
                    content = {}
                    for field in form_fields(schema):
                        self._still_open(question_id)
                        value = self._field(field)
                        if value is not None:
                            content[field.name] = value
                    self._answer(question_id, "accept", content, "")
                elif choice in ("c", "cancel"):
                    self._answer(question_id, "cancel", None, "cancelled at the terminal")
                else:
                    self._answer(question_id, "decline", None, "declined at the terminal")
            except Dismissed:
                self._answer(question_id, "cancel", None, "the terminal's input ended")
            except Closed as closed:
                self._say(f"{question_id}: {closed}")

    def _still_open(self, question_id: str) -> None:
        """Raise Closed when the question is no longer pending."""
        try:
            question = self.tree.question(question_id)
        except KeyError:
            raise Closed("question closed (forgotten)") from None
        answer = question.answer
        if answer is not None:
            why = f": {terminal_text(answer.reason, 200)}" if answer.reason else ""
            raise Closed(f"question closed ({answer.action}{why})")

    def _field(self, field: FormField) -> Any:
        """Ask one field until the value fits (None: an optional field left out)."""
        prompt = _prompt(field)  # every part of it is the server's text, made safe
        while True:
            text = self._line(prompt)
            if not text and not field.has_default:
                if not field.required:
                    return None
                self._say(f"    {field.name} is required")
                continue
            if not text:  # the server's default: checked like a typed value, it may not fit
                value, problem = field.default, ""
            else:
                value, problem = _parse(field, text)
            problems = [problem] if problem else field_problems(field, value)
            if not problems:
                return value
            self._say(f"    {terminal_text('; '.join(problems))}")

    def _line(self, prompt: str) -> str:
        try:
            return self.ask(prompt).strip()
        except (EOFError, OSError):
            raise Dismissed from None

    def _say(self, text: str) -> None:
        print(text, file=self.out, flush=True)


def asker_text(data: dict[str, Any]) -> str:
    """Who asks and what, from an `input.requested` event's data: "The tree asks (step 'X'):
    ..." for a question of the tree's own `ask` step (`source` "tree"), else "MCP server 'X'
    asks: ..."; made safe to print."""
    name, message = terminal_text(data.get("server"), 100), data.get("message")
    said = terminal_text(message, multiline=True)
    if data.get("source") == "tree":
        return f"The tree asks (step '{name}'): {said}"
    return f"MCP server '{name}' asks: {said}"


def _prompt(field: FormField) -> str:
    """`  name - what it is (kind, required) [default]: `, every part made safe to print."""
    about = field.title if field.title and field.title != field.name else ""
    if field.description:
        about = f"{about}: {field.description}" if about else field.description
    label = f"{field.name} - {about}" if about else field.name
    details = [_kind(field)] + (["required"] if field.required else [])
    default = ""
    if field.has_default:
        shown = field.default
        default = f" [{', '.join(map(str, shown)) if isinstance(shown, list) else shown}]"
    return terminal_text(f"  {label} ({', '.join(details)}){default}", 4 * LABEL_CHARS) + ": "


def _kind(field: FormField) -> str:
    if field.choices:
        listed = ", ".join(
            v if v == label else f"{v}={terminal_text(label, LABEL_CHARS)}"
            for v, label in field.choices
        )
        return f"some of, comma-separated: {listed}" if field.multiple else f"one of: {listed}"
    if field.type == "boolean":
        return "y/n"
    if field.type == "integer":
        return "whole number"
    if field.type == "string" and field.schema.get("format"):
        return f"text, {field.schema['format']}"
    return {"number": "number", "array": "comma-separated"}.get(field.type, "text")


def _parse(field: FormField, text: str) -> tuple[Any, str]:
    """The value typed for a field, or a problem."""
    if field.type == "boolean":
        if is_yes(text) or is_no(text):
            return is_yes(text), ""
        return None, "answer y or n"
    if field.type == "integer":
        try:
            return int(text), ""
        except ValueError:
            return None, f"{text!r} is not a whole number"
    if field.type == "number":
        try:
            number = float(text)
        except ValueError:
            return None, f"{text!r} is not a number"
        return (int(number) if number.is_integer() and "." not in text else number), ""
    if field.multiple:
        parts = [part.strip() for part in text.split(",") if part.strip()]
        wrong = [part for part in parts if _choice(field, part) is None]
        if wrong:
            return None, f"{', '.join(map(repr, wrong))}: not among the choices"
        return [_choice(field, part) for part in parts], ""
    if field.choices:
        value = _choice(field, text)
        return value, "" if value is not None else f"{text!r} is not one of the choices"
    return text, ""


def _choice(field: FormField, text: str) -> Any:
    """The choice's value for its value or label (any case), or None."""
    for value, label in field.choices:
        if text.lower() in (value.lower(), label.lower()):
            return value
    return None

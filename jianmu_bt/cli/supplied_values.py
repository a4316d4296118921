"""Values given on `jianmu resume`'s command line: `ID=VALUE`, the value inline or `@FILE`.

`--edit CALL_ID=JSON` (arguments), `--answer QUESTION_ID=VALUE` (a question's answer) and
`--result CALL_ID=JSON` (an external call's result) share one way to split the id from the
value and to read `@FILE` (`given_text`). How the text becomes a value:

- `--result` and `--edit` take JSON only (a result goes on to systems and models: `fast` is a
  mistake there, not the text "fast").
- `--answer` takes JSON when the text is JSON (`7`, `true`, `["a", "b"]`, `{"n": 1}`, `"7"`),
  and otherwise the text itself as a string, so `--answer q_ab12=fast` answers "fast". Text
  that starts like JSON (`{`, `[` or `"`) must be JSON: a broken object is said as such, never
  taken as a string. To answer a string question with text that is JSON (the text `7`, `true`,
  `null`), quote it: `--answer 'q_ab12="7"'`.

A value read from `@FILE` follows the same rule, without its final line break. Every mistake is
one CLIError line naming the option and the id.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jianmu_bt.cli.edited_arguments import EditTextError, json_from_text
from jianmu_bt.cli.errors import CLIError

#: How text that must be JSON begins (after spaces): an answer that starts so is parsed strictly.
JSON_OPENERS = ("{", "[", '"')


def given_text(option: str, value: str, example: str) -> tuple[str, str, str]:
    """Split `ID=VALUE` (VALUE inline or `@FILE`) into the id, the value's text and where it
    came from (`--answer q_1`, or `--answer q_1 (answer.json)`); CLIError when there is no id
    or the file cannot be read."""
    step_id, sep, text = value.partition("=")
    step_id = step_id.strip()
    if not sep or not step_id:
        raise CLIError(f"{option} {value!r}: expected {example}")
    where = f"{option} {step_id}"
    if text.startswith("@"):
        path = Path(text[1:])
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
            raise CLIError(f"{where}: cannot read {path}: {why}") from None
        text = text.removesuffix("\n").removesuffix("\r")
        where = f"{where} ({path})"
    return step_id, text, where


def answer_from_text(text: str) -> Any:
    """An answer as typed: its JSON value, else the text itself (see the module docstring);
    EditTextError for text that starts like JSON and is not."""
    if text.lstrip().startswith(JSON_OPENERS):
        return json_from_text(text)
    try:
        return json_from_text(text)
    except EditTextError:
        return text


def _unique(option: str, step_id: str, taken: dict[str, Any]) -> None:
    if step_id in taken:
        raise CLIError(f"{option} {step_id}: given twice; give one value for each id")


def parse_answers(given: list[str]) -> dict[str, Any]:
    """`--answer QUESTION_ID=VALUE` values as question id -> answer."""
    answers: dict[str, Any] = {}
    for value in given:
        step_id, text, where = given_text("--answer", value, "QUESTION_ID=VALUE, e.g. q_ab12=fast")
        _unique("--answer", step_id, answers)
        if not text.strip():
            raise CLIError(f"{where}: no answer given (an empty text is --answer {step_id}='\"\"')")
        try:
            answers[step_id] = answer_from_text(text)
        except EditTextError as exc:
            why = 'a value starting with {, [ or " must be JSON'
            raise CLIError(f"{where}: {exc} ({why})") from None
    return answers


def parse_results(given: list[str]) -> dict[str, Any]:
    """`--result CALL_ID=JSON` values as call id -> result (JSON is required)."""
    results: dict[str, Any] = {}
    for value in given:
        example = 'CALL_ID=JSON, e.g. call_1a2b={"passed": true}'
        step_id, text, where = given_text("--result", value, example)
        _unique("--result", step_id, results)
        try:
            results[step_id] = json_from_text(text)
        except EditTextError as exc:
            raise CLIError(f"{where}: the result must be JSON: {exc}") from None
    return results


def quoted_text_problem(question_id: str, schema: Any, value: Any) -> str:
    """Why an answer read as JSON (`7`, `true`, `null`) cannot answer a text question whose
    schema its text would fit, saying how to quote it ("" when that is not the case)."""
    from jianmu_bt.tools.external import value_problems

    if isinstance(value, str) or not isinstance(schema, dict) or schema.get("type") != "string":
        return ""
    text = json.dumps(value, ensure_ascii=False)
    if value_problems(schema, text, "answer"):
        return ""
    quoted = json.dumps(text, ensure_ascii=False)
    return (
        f"--answer {question_id}: {text} reads as JSON ({type(value).__name__}), and the "
        f"question wants text; to answer the text, quote it: --answer '{question_id}={quoted}'"
    )

"""A reviewer's edit of a held call at the terminal: the arguments typed as one JSON object.

Both terminal desks (`jianmu run --approve ask`, `jianmu resume --approve ask`) accept `e`
besides y/N: they then read the call's new arguments on one line (`EDIT_PROMPT`), and approve the
call with them. Text that is not a JSON object is refused here, in one line (`EditTextError`);
whether the arguments fit the tool's schema and its guard is checked where the call is decided.
`jianmu resume --edit CALL_ID=JSON` reads its JSON the same way.

`r` answers a held call in its place ("respond instead"): the call does not run, and the agent
reads the reply typed at `RESPOND_PROMPT` as its result (`jianmu resume --respond CALL_ID=TEXT`
from the command line). The question's choices stay `[y/N/e]`; `HELD_HINT`, printed above them,
lists every answer.
"""

from __future__ import annotations

import json
from typing import Any

from jianmu_bt.cli.call_text import escape_hidden

#: What a person types to edit a held call's arguments (any case).
EDIT_ANSWERS = ("e", "edit")
#: The prompt for the edited arguments.
EDIT_PROMPT = "arguments as JSON: "
#: What a person types to answer a held call in its place (any case), and the reply's prompt.
RESPOND_ANSWERS = ("r", "respond")
RESPOND_PROMPT = "reply the agent reads as the call's result: "
#: The line above a held call's question that says what each answer does.
HELD_HINT = "  y approve, n deny (the default), e edit the arguments, r respond in its place\n"
#: How much of a text that is not an object is quoted back.
QUOTED_CHARS = 60


class EditTextError(ValueError):
    """Text that is not a JSON object of arguments; the message says why, in one line."""


def is_edit(answer: str) -> bool:
    """Whether a typed answer asks to edit the call's arguments (`e`, `edit`)."""
    return answer.strip().lower() in EDIT_ANSWERS


def is_respond(answer: str) -> bool:
    """Whether a typed answer asks to respond in the call's place (`r`, `respond`)."""
    return answer.strip().lower() in RESPOND_ANSWERS


def json_from_text(text: str) -> Any:
    """The JSON value `text` holds; EditTextError when it is not JSON (`NaN` and `Infinity`,
    which are not JSON, included)."""
    try:
        return json.loads(text, parse_constant=_not_json)
    except json.JSONDecodeError as exc:
        raise EditTextError(
            f"not JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except ValueError as exc:
        raise EditTextError(f"not JSON: {exc}") from None


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def arguments_from_text(text: str) -> dict[str, Any]:
    """The arguments a JSON object's text holds; EditTextError when it is not JSON or not an
    object (`not JSON at line 1 column 2: ...`, `the arguments must be a JSON object, ...`)."""
    arguments = json_from_text(text)
    if not isinstance(arguments, dict):
        quoted = escape_hidden(text.strip())
        if len(quoted) > QUOTED_CHARS:
            quoted = quoted[:QUOTED_CHARS] + "..."
        raise EditTextError(f"the arguments must be a JSON object, not {quoted}")
    return arguments

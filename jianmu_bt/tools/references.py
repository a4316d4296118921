"""One resolver for `module:attr` references: tools config, node kinds, built-ins, MCP, CLI.

The rule set, used everywhere a file or a command names Python code:

- the form is `module:attr`, where `module` is a dotted module name and `attr` a dotted attribute
  path inside it (`pkg.mod:Class.factory`); both parts are required;
- `search_paths` (for a tree file: its folder) are put in front of `sys.path` only while the
  module is imported, so a tree finds the modules next to it wherever it is run from;
- a module that is missing or raises while importing, and an attribute that is missing, give a
  `ReferenceProblem` whose message names the reference and says what went wrong, with a
  "did you mean" suggestion for a misspelt attribute. Never a traceback for a user's typo.
"""

from __future__ import annotations

import difflib
import importlib
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any


class ReferenceProblem(ValueError):
    """A `module:attr` reference that cannot be resolved; the message says which and why."""

    def __init__(self, reference: str, reason: str) -> None:
        self.reference = reference
        self.reason = reason
        super().__init__(f"cannot resolve '{reference}': {reason}")


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest of `choices`, or "" when nothing is close."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def is_reference(text: str) -> bool:
    """Whether `text` has the `module:attr` form (a built-in tool name does not)."""
    module, sep, attr = text.partition(":")
    return bool(sep and module.strip() and attr.strip())


def split_reference(reference: str) -> tuple[str, str]:
    """`(module, attr)` of a reference; ReferenceProblem when it is not of the form."""
    module, sep, attr = reference.partition(":")
    if not sep or not module.strip() or not attr.strip():
        raise ReferenceProblem(reference, "expected the form module:attribute (pkg.mod:name)")
    return module.strip(), attr.strip()


def import_module(reference: str, module: str, search_paths: Iterable[Path | str] = ()) -> Any:
    """Import `module` (for `reference`'s messages), with `search_paths` in front of sys.path."""
    added = [str(p) for p in search_paths if str(p) not in sys.path]
    sys.path[:0] = added
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise ReferenceProblem(reference, f"no module named '{exc.name or module}'") from None
    except Exception as exc:  # a module that fails while importing: report, do not crash
        raise ReferenceProblem(
            reference, f"importing '{module}' raised {type(exc).__name__}: {exc}"
        ) from None
    finally:
        for entry in added:
            if entry in sys.path:
                sys.path.remove(entry)


def resolve_reference(reference: str, search_paths: Iterable[Path | str] = ()) -> Any:
    """The object a `module:attr` reference names (ReferenceProblem when it cannot be found)."""
    module_name, attr = split_reference(reference)
    value: Any = import_module(reference, module_name, search_paths)
    where = module_name
    for index, part in enumerate(attr.split(".")):
        try:
            value = getattr(value, part)
        except AttributeError:
            names = [n for n in dir(value) if not n.startswith("_")]
            raise ReferenceProblem(
                reference, f"'{where}' has no attribute '{part}'{did_you_mean(part, names)}"
            ) from None
        where = f"{module_name}:{'.'.join(attr.split('.')[: index + 1])}"
    return value

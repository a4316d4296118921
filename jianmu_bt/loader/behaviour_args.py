"""The `args` of a `behaviour` node checked against its class's constructor, before building.

A `behaviour` node is built as `Class(name=..., **args)`. Binding those arguments to the
constructor's signature finds, before anything is built, an argument the class does not take
(`unknown-argument`, with the closest name) and a required one left out (`missing-argument`),
each located in the file. A class whose import fails (its module is searched next to the tree
file first) is reported at `class:`; a constructor without a readable signature is not checked.
"""

from __future__ import annotations

import difflib
import inspect

from jianmu_bt.loader.behaviour_class import load_behaviour_class
from jianmu_bt.loader.diagnostics import Diagnostic, quote_list
from jianmu_bt.loader.model import BehaviourConfig
from jianmu_bt.loader.node_facts import NodeProblem
from jianmu_bt.loader.records import NodeRecord
from jianmu_bt.tools.references import did_you_mean


def check_behaviour_args(record: NodeRecord, config: BehaviourConfig) -> list[Diagnostic]:
    """The argument problems of one `behaviour` node."""
    try:
        cls = load_behaviour_class(config.class_, [record.unit.base_dir])
    except NodeProblem as exc:  # located at `class:`, before anything is built
        line, col = record.at(exc.path)
        return [Diagnostic(record.unit.file, line, col, "error", exc.message, exc.code)]
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return []  # a signature Python cannot read
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        known = None
    else:  # `name` is the node's own `name:`, never one of `args`
        known = [n for n, p in params.items() if p.kind is not p.VAR_POSITIONAL and n != "name"]
    label = f"behaviour '{record.name}' ({config.class_})"
    found = []
    meant: set[str] = set()  # a misspelt argument is one finding, not also a missing one
    for key in config.args:
        if key == "name":
            found.append(
                Diagnostic(
                    record.unit.file,
                    *record.at(("args", key), key=True),
                    "error",
                    f"{label}: `args.name` is not an argument: the node's name is its own `name:`",
                    "unknown-argument",
                    "move it out of `args:` and write `name: ...` on the node",
                )
            )
        elif known is not None and key not in known:
            meant.update(difflib.get_close_matches(key, known, n=1, cutoff=0.6))
            line, col = record.at(("args", key), key=True)
            found.append(
                Diagnostic(
                    record.unit.file,
                    line,
                    col,
                    "error",
                    f"{label} takes no argument '{key}'{did_you_mean(key, known)}",
                    "unknown-argument",
                    f"its arguments: {quote_list(known)}",
                )
            )
    given = {"name", *config.args, *meant}
    for name, param in params.items():
        required = param.default is param.empty and param.kind in (
            param.POSITIONAL_OR_KEYWORD,
            param.KEYWORD_ONLY,
        )
        if required and name not in given:
            where = ("args",) if config.args else ("class",)
            found.append(
                Diagnostic(
                    record.unit.file,
                    *record.at(where, key=True),
                    "error",
                    f"{label} needs the argument '{name}'",
                    "missing-argument",
                    f"add `{name}: ...` under `args:` (its arguments: "
                    f"{quote_list(n for n in params if n != 'name')})",
                )
            )
    return found

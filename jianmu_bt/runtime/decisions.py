"""Reviewers' decisions on the calls a paused durable run waits on, as journal rows.

`jianmu resume RUN --approve CALL` (or `Tree.resume(..., approve=[...])`) decides calls that are
held for approval or in doubt after a crash. Each decision is a new journal row bound to the call
(its key, tool and arguments digest): `approved`, `denied` (a held call) or `skipped` (a call in
doubt). A held call may be approved with other arguments (`edits`): they must fit the tool's
schema, the `approved` row keeps them and who decided, and the guard checks the edited call
against every policy when the run reaches it (an edit never escapes the guard). A held call may
also be answered in its place (`responses`): it is `denied`, with the reviewer's reply as a
successful result the node (an agent) reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jianmu_bt.guard.decision import ANSWERED_NOTE
from jianmu_bt.store import JournalEntry
from jianmu_bt.tools import Tool
from jianmu_bt.tools.argument_schema import edit_refusal

__all__ = ["DENIED_ERROR", "SKIPPED_ERROR", "Decisions", "decision_rows"]

DENIED_ERROR = "Error: a reviewer denied this call; it did not run"
SKIPPED_ERROR = (
    "Error: skipped: this call was in flight when the run stopped and a reviewer chose not to "
    "run it again; it may or may not have happened"
)


class DecisionError(ValueError):
    """A decision that cannot be taken (the message says which call and why, on one line)."""


@dataclass(frozen=True)
class Decisions:
    """What reviewers decided: calls to approve (call ids or keys, or "all"), to deny, to
    approve with other arguments (`edits`: call id -> arguments), and who decided (`by`)."""

    approve: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    edits: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    by: str = "api"
    responses: Mapping[str, str] = field(default_factory=dict)
    #: Answers to questions that wait (question id -> value) and results of external calls
    #: that wait (call id -> value): see `jianmu_bt.runtime.outside`.
    answers: Mapping[str, Any] = field(default_factory=dict)
    results: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        approve: Iterable[str] = (),
        deny: Iterable[str] = (),
        edits: Mapping[str, Mapping[str, Any]] | None = None,
        by: str = "api",
        responses: Mapping[str, str] | None = None,
        answers: Mapping[str, Any] | None = None,
        results: Mapping[str, Any] | None = None,
    ) -> Decisions:
        """Decisions from any iterables (an edited call is approved, an answered one denied)."""
        edits, responses = dict(edits or {}), dict(responses or {})
        return cls(
            (*approve, *edits),
            (*deny, *responses),
            edits,
            by,
            responses,
            dict(answers or {}),
            dict(results or {}),
        )

    def __bool__(self) -> bool:
        return bool(self.approve or self.deny or self.answers or self.results)


def decision_rows(
    run_id: str,
    waiting: list[JournalEntry],
    decisions: Decisions,
    tool_named: Callable[[str], Tool | None],
    approved_before: Mapping[str, Any] | None = None,
) -> list[JournalEntry]:
    """The journal rows of `decisions` on the `waiting` calls (held or in doubt, latest rows);
    DecisionError for a call that does not wait, one both approved and denied, or an edit that
    is not of a held call or does not fit its tool's schema. `approved_before` (call key ->
    its last `approved` row's document) keeps an earlier edit when a call in doubt is approved
    to run again: it runs again as it was approved."""
    approve, deny = decisions.approve, decisions.deny
    for call_id in (*(a for a in approve if a != "all"), *deny):
        if not any(_names(e, call_id) for e in waiting):
            listed = ", ".join(f"{e.call_id} ({e.tool}, {e.status})" for e in waiting)
            raise DecisionError(
                f"run {run_id} has no call {call_id!r} waiting for a decision; "
                f"waiting: {listed or 'none'}"
            )
    every = "all" in approve
    rows: list[JournalEntry] = []
    for entry in waiting:  # "all" with a deny means every other call: not a conflict
        approved = every or any(_names(entry, c) for c in approve)
        if any(_names(entry, c) for c in deny):
            if any(_names(entry, c) for c in approve):
                raise DecisionError(
                    f"call {entry.call_id} ({entry.tool}) of run {run_id} is both approved "
                    "and denied; give one decision per call"
                )
            rows.append(_refused(run_id, entry, decisions))
        elif approved:
            edit = next((a for c, a in decisions.edits.items() if _names(entry, c)), None)
            document: dict[str, Any] = {"by": decisions.by}
            if edit is not None:
                document["arguments"] = _checked_edit(run_id, entry, edit, tool_named)
            elif entry.status == "in_doubt":
                earlier = (approved_before or {}).get(entry.key)
                if isinstance(earlier, Mapping) and earlier.get("arguments") is not None:
                    document["arguments"] = earlier["arguments"]
            rows.append(_with(entry, "approved", document))
    return rows


def _refused(run_id: str, entry: JournalEntry, decisions: Decisions) -> JournalEntry:
    """The row of a denied call: `denied` (held) or `skipped` (in doubt), or `denied` with the
    reviewer's reply as its result when they answered in its place."""
    answer = next((a for c, a in decisions.responses.items() if _names(entry, c)), None)
    if answer is not None:
        if entry.status != "held":
            raise DecisionError(
                f"call {entry.call_id} ({entry.tool}) of run {run_id} is {entry.status}, not "
                "held: only a held call can be answered in its place"
            )
        output = f"{ANSWERED_NOTE}\n{answer.strip()}"
        result = {"tool": entry.tool, "ok": True, "output": output, "error": None}
        return _with(entry, "denied", {**result, "by": decisions.by})
    status = "denied" if entry.status == "held" else "skipped"
    error = DENIED_ERROR if status == "denied" else SKIPPED_ERROR
    result = {"tool": entry.tool, "ok": False, "output": None, "error": error}
    return _with(entry, status, result)


def _checked_edit(
    run_id: str,
    entry: JournalEntry,
    edit: Mapping[str, Any],
    tool_named: Callable[[str], Tool | None],
) -> dict[str, Any]:
    if entry.status != "held":
        raise DecisionError(
            f"call {entry.call_id} ({entry.tool}) of run {run_id} is {entry.status}, not held: "
            "only a held call can be approved with other arguments"
        )
    refused = edit_refusal(entry.tool, tool_named(entry.tool), edit)
    if refused is not None:
        raise DecisionError(f"call {entry.call_id}: {refused}")
    return dict(edit)


def _names(entry: JournalEntry, call_id: str) -> bool:
    return call_id in (entry.call_id, entry.key)


def _with(entry: JournalEntry, status: str, result: Any) -> JournalEntry:
    """The entry's call in a new status (a new journal row: the store numbers it)."""
    return dataclasses.replace(entry, status=status, result=result, position=0, created=0.0)

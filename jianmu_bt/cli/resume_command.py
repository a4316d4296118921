"""`jianmu resume RUN_ID`: continue a recorded run in this process, from its journal.

Steps that finished are not run again: a completed call's result comes from the journal. Calls
that wait for a decision (held by the guard, or in doubt after a crash) are decided with
`--approve CALL_ID` / `--deny CALL_ID` (repeatable; `--approve all` approves every one); on a
terminal, `--approve ask` (the default there) asks about each (`e` approves a held call with
other arguments typed there: `jianmu_bt.cli.resume_questions`). `--edit CALL_ID=JSON` approves a
held call with other arguments (checked against the tool's schema now, and by the guard when the
run reaches the call); `--respond CALL_ID=TEXT` answers a held call in its place (it does not
run) (`r` at the terminal). `--answer QUESTION_ID=VALUE` answers a question the run waits on
(an `ask` step) and `--result CALL_ID=JSON` gives an external call its result, each checked
against its schema before the run goes on (how VALUE is read: `jianmu_bt.cli.supplied_values`);
at the terminal the waiting questions are asked too (`jianmu_bt.cli.resume_answers`). Without a
decision or a value a step stays waiting and the run stays paused (exit 3).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from jianmu_bt.cli.approvals import default_mode
from jianmu_bt.cli.edited_arguments import EditTextError, arguments_from_text
from jianmu_bt.cli.errors import CLIError
from jianmu_bt.cli.loading import load_tree_file
from jianmu_bt.cli.resume_answers import ask_questions, read_line
from jianmu_bt.cli.resume_questions import Answers, ask_about, schema_refusal
from jianmu_bt.cli.run_session import add_output_options, run_and_report
from jianmu_bt.cli.stores import STORE_HELP, open_run_store, store_errors, waiting_calls
from jianmu_bt.cli.subcommand import add_command
from jianmu_bt.cli.supplied_values import (
    given_text,
    parse_answers,
    parse_results,
    quoted_text_problem,
)
from jianmu_bt.cli.view_command import add_view_options, run_viewer

HELP = "continue a paused or interrupted run from its journal"
EPILOG = """\
examples:
  jianmu resume run_3f2a9c0d1e2b                         # stays paused while calls wait
  jianmu resume run_3f2a9c0d1e2b --approve call_1a2b3c4d5e
  jianmu resume run_3f2a9c0d1e2b --deny call_1a2b3c4d5e --json
  jianmu resume run_3f2a9c0d1e2b --approve all --store /data/runs.db
  jianmu resume run_3f2a9c0d1e2b --edit 'call_1a2b3c4d5e={"amount": 50}'
  jianmu resume run_3f2a9c0d1e2b --respond 'call_1a2b3c4d5e=Already paid by card.'
  jianmu resume run_3f2a9c0d1e2b --view                  # decide in the browser viewer
  jianmu resume run_3f2a9c0d1e2b --answer q_5e6f7a8b9c=fast --answer 'q_0d1e2f3a4b=7'
  jianmu resume run_3f2a9c0d1e2b --result 'call_6a7b8c9d0e={"passed": true}'
  jianmu resume run_3f2a9c0d1e2b --result call_6a7b8c9d0e=@verdict.json

--approve on a held call runs it; on a call in doubt (it was running when the process died and
has side effects) runs it again. --deny on a held call marks it denied; on a call in doubt,
skipped. Either way the node sees a failed result and the tree's own failure handling decides.
--answer takes JSON when the text is JSON (7, true, ["a"], "7"), else the text itself ("fast");
text starting with { [ or " must be JSON. --result takes JSON only. Both take @FILE.
Exit status: 0 succeeded, 1 failed (or cannot be resumed), 3 paused again.
"""


def add_parser(commands: Any) -> None:
    """Register `resume` on the top-level subparsers."""
    parser = add_command(commands, "resume", help=HELP, epilog=EPILOG, handler=handle)
    parser.add_argument("run_id", metavar="RUN_ID", help="the run to continue (see `jianmu runs`)")
    parser.add_argument("--store", metavar="PATH", help=STORE_HELP)
    parser.add_argument(
        "--approve",
        action="append",
        default=[],
        metavar="CALL_ID|all|ask",
        help="approve a waiting call (repeatable), every waiting call (all), or ask at the "
        "terminal (ask; the default on a terminal)",
    )
    parser.add_argument(
        "--deny", action="append", default=[], metavar="CALL_ID", help="deny a waiting call"
    )
    parser.add_argument(
        "--edit",
        action="append",
        default=[],
        metavar="CALL_ID=JSON",
        help="approve a held call with these arguments instead (a JSON object, or @FILE with "
        "one); repeatable",
    )
    parser.add_argument(
        "--respond",
        action="append",
        default=[],
        metavar="CALL_ID=TEXT",
        help="answer a held call in its place: it does not run, and the agent reads TEXT as "
        "its result; repeatable",
    )
    parser.add_argument(
        "--answer",
        action="append",
        default=[],
        metavar="QUESTION_ID=VALUE",
        help="answer a question the run waits on: JSON, else the text as it is (@FILE reads "
        "it from a file); checked against the question's schema; repeatable",
    )
    parser.add_argument(
        "--result",
        action="append",
        default=[],
        metavar="CALL_ID=JSON",
        help="give an external call that waits its result (JSON, or @FILE holding it); "
        "checked against the tool's output schema; repeatable",
    )
    add_output_options(parser)
    add_view_options(parser)


def handle(args: argparse.Namespace) -> int:
    """Resume the run; 0 succeeded, 1 failed, 3 paused."""
    store = open_run_store(args.store, create=False)
    try:
        with store_errors():
            run = store.get_run(args.run_id)
        if run.status in ("succeeded", "failed"):
            raise CLIError(f"run {args.run_id} has already {run.status}; nothing to resume")
        if not run.tree_path:
            raise CLIError(
                f"run {args.run_id} was not started from a tree file; resume it "
                "from Python with tree.resume() (or give its PythonTree a source=)"
            )
        from jianmu_bt.runtime.python_tree import PYTHON_SOURCE_PREFIX

        python = run.tree_path.startswith(PYTHON_SOURCE_PREFIX)
        if not python and not Path(run.tree_path).is_file():
            raise CLIError(f"run {args.run_id}: its tree file {run.tree_path} no longer exists")
        edits, responses = parse_edits(args.edit), parse_responses(args.respond)
        given, results = parse_answers(args.answer), parse_results(args.result)
        decided = args.approve or args.deny or edits or responses or given or results
        # With --view and no --approve ask, the page decides (the run waits for it).
        view = bool(getattr(args, "view", False))
        ask = "ask" in args.approve or (not decided and not view and _on_terminal())
        answers = Answers([a for a in args.approve if a != "ask"], list(args.deny), edits)
        answers.responses.update(responses)
        tree = _python_tree(run.tree_path) if python else load_tree_file(run.tree_path)
        try:
            with store_errors():  # after the tree: its modules decode the journal's values
                steps = waiting_calls(store, args.run_id)
            _check_text_answers(steps, given)
            if ask:
                ask_about(steps, answers, schema_refusal(tree))
                # Input that ended leaves nobody to ask: what still waits pauses the run.
                ask = ask_questions(steps, given, read_line, _step_names(tree))

            def start() -> Any:
                with store_errors():
                    return tree.resume(
                        args.run_id,
                        store=store,
                        approve=answers.approve,
                        deny=answers.deny,
                        edits=answers.edits,
                        responses=answers.responses,
                        answers=given,
                        results=results,
                        by="cli",
                        hold="wait" if ask or view else "pause",
                        timeout=args.timeout,
                    )

            def waiting() -> list[Any]:
                return waiting_calls(store, args.run_id)

            before = paused_state(store, args.run_id, tree)
            mode = "ask" if ask else "later"
            with run_viewer(tree, args):
                return run_and_report(tree, args, mode, start, waiting, before=before)
        finally:
            tree.close()
    finally:
        store.close()


def paused_state(store: Any, run_id: str, tree: Any) -> dict[str, Any] | None:
    """The state the run paused with (its latest checkpoint that holds one), as the summary
    compares it: the resumed run's changes are counted from it, not from the initial state
    (the values the replay writes again are no change). None when no checkpoint holds one."""
    from jianmu_bt.cli.summary import state_snapshot

    with store_errors():
        latest = store.latest_checkpoint(run_id)
        data = latest.data if latest is not None else {}
        if "state" not in data:  # those written after a call ended leave it out
            history = store.history(run_id)
            data = next((c.data for c in reversed(history) if "state" in c.data), {})
    if "state" not in data:
        return None
    try:
        tree.state.restore(data["state"])  # (the resume puts the initial state back first)
    except ValueError:
        return None
    return state_snapshot(tree.state)


def parse_responses(given: list[str]) -> dict[str, str]:
    """`--respond CALL_ID=TEXT` values as call id -> the reply; CLIError for one without an id
    or a reply."""
    responses: dict[str, str] = {}
    for value in given:
        call_id, sep, text = value.partition("=")
        if not sep or not call_id.strip() or not text.strip():
            raise CLIError(
                f"--respond {value!r}: expected CALL_ID=TEXT, e.g. call_1a2b='Already paid.'"
            )
        responses[call_id.strip()] = text.strip()
    return responses


def parse_edits(given: list[str]) -> dict[str, dict[str, Any]]:
    """`--edit CALL_ID=JSON` values as call id -> arguments (JSON text, or @FILE holding it);
    CLIError naming the value that is not one."""
    edits: dict[str, dict[str, Any]] = {}
    for value in given:
        example = 'CALL_ID=JSON, e.g. call_1a2b={"n": 1}'
        call_id, text, where = given_text("--edit", value, example)
        try:
            edits[call_id] = arguments_from_text(text)
        except EditTextError as exc:
            raise CLIError(f"{where}: {exc}") from None
    return edits


def _check_text_answers(steps: list[Any], given: dict[str, Any]) -> None:
    """CLIError for an answer read as JSON (`7`) that its text question wants as text."""
    schemas = {s.call_id: (s.result or {}).get("schema") for s in steps if s.status == "waiting"}
    for question_id, value in given.items():
        problem = quoted_text_problem(question_id, schemas.get(question_id), value)
        if problem:
            raise CLIError(problem)


def _step_names(tree: Any) -> Any:
    """The name of the tree's step a node key stands for (the key when none has it)."""
    runner = tree.runner
    names = dict(zip(runner.node_keys, (node.name for node in runner.nodes), strict=False))

    def name(key: str) -> str:
        return str(names.get(key, key))

    return name


def _python_tree(source: str) -> Any:
    """The PythonTree a run's `python:module:function` source builds (CLIError when it cannot:
    the module must be importable here, on PYTHONPATH or from the current folder)."""
    from jianmu_bt.runtime.python_tree import python_tree_from_source

    if "" not in sys.path:  # `python -m` puts the current folder first; the script may not
        sys.path.insert(0, "")
    try:
        return python_tree_from_source(source)
    except ValueError as exc:
        raise CLIError(str(exc)) from None


def _on_terminal() -> bool:
    return default_mode() == "ask"

"""A reviewer sees the whole held call before deciding: complete arguments however long, every
control and invisible formatting character escaped, and why the call is held. The terminal desk
of `jianmu run --approve ask`, `jianmu resume --approve ask`, and the text they share."""

from __future__ import annotations

import io
import os
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import REPO, answering, jianmu

from jianmu_bt.cli.approvals import ApprovalDesk
from jianmu_bt.cli.call_text import (
    FOLDED,
    MARGIN,
    arguments_text,
    call_summary,
    fold,
    held_call_text,
    margin_lines,
)
from jianmu_bt.loader import load_tree
from jianmu_bt.tools import tool

#: A value that would hide, erase or reorder text on a terminal if printed as it is.
TRICKS = "pay \u202eevil\u202c \x1b[2J\x00\x7f\x9b\u200b\ufeff\u061c\u2066\u2028 done"
TRICKS_SHOWN = (
    "pay \\u202eevil\\u202c \\u001b[2J\\u0000\\u007f\\u009b\\u200b\\ufeff\\u061c\\u2066\\u2028 done"
)
LONG = "".join(f"<{n:04d}>" for n in range(120))  # 720 characters, each piece unique
#: The guard's reason for holding a `transfer` call (`guard: {approve: [transfer]}`).
REASON = "transfer runs only after a reviewer approves the call"
RAW = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) in ("Cc", "Cf")]


ARGUMENTS = {"note": TRICKS, "payload": LONG + "\nsecond line"}


def hidden_characters(text: str) -> list[str]:
    """The control and formatting characters printed as they are (a newline between lines is
    the desk's own)."""
    return sorted({ch for ch in text if ch != "\n" and unicodedata.category(ch) in ("Cc", "Cf")})


def logical_lines(block: str) -> list[str]:
    """The block's lines with each folded line joined again to the line it continues: as it
    is to an argument line, with a space to the heading (wrapped at spaces)."""
    lines: list[str] = []
    for row in block.split("\n"):
        if row.startswith(FOLDED) and lines:
            space = "" if lines[-1].startswith(MARGIN) else " "
            lines[-1] += space + row[len(FOLDED) :]
        else:
            lines.append(row)
    return lines


def arguments_shown(block: str) -> str:
    """The arguments a block shows, without the margin, folds joined again."""
    rows = logical_lines(block)
    return "\n".join(row[len(MARGIN) :] for row in rows if row.startswith(MARGIN))


@tool
def transfer(note: str, payload: str) -> str:
    """Pretend to move money."""
    return "moved"


TREE = f"""
version: 1
name: held
state:
  out: {{type: string}}
tools: [transfer]
guard: {{approve: [transfer]}}
root:
  tool: {{name: Pay, tool: transfer, output: out, arguments: {{
    note: "{TRICKS.encode("unicode_escape").decode()}", payload: "{LONG}\\nsecond line"}}}}
"""


def test_arguments_are_complete_json_with_every_hidden_character_escaped() -> None:
    shown = arguments_text(ARGUMENTS)
    assert f'"note": "{TRICKS_SHOWN}"' in shown
    assert f'"payload": "{LONG}\\nsecond line"' in shown
    assert hidden_characters(shown) == []


def test_every_control_and_format_character_is_escaped() -> None:
    shown = arguments_text("".join(RAW))
    assert hidden_characters(shown) == []
    assert "\\u202e" in shown and "\\U000e0001" in shown  # a bidi override, a language tag


def test_a_long_line_is_folded_never_cut_and_no_piece_is_wider_than_the_room() -> None:
    line = LONG + "漢字" * 40
    pieces = fold(line, 37)
    assert "".join(pieces) == line
    assert all(len(piece) + piece.count("漢") + piece.count("字") <= 37 for piece in pieces)
    lines = margin_lines(f"{{\n  {line}\n}}", 41)
    assert lines[0] == "  | {" and lines[-1] == "  | }"
    assert all(row.startswith(("  | ", "  + ")) for row in lines)
    assert "".join(row[4:] for row in lines[1:-1]) == f"  {line}"


def test_the_block_says_which_call_why_it_is_held_and_all_its_arguments() -> None:
    block = held_call_text(
        "transfer", "call_1", {"payload": LONG}, reason=REASON, policy="approval_required", width=60
    )
    heading, *_ = logical_lines(block)
    assert heading == f"held: transfer [call_1]: {REASON} (policy approval_required)"
    first, second, *_ = block.splitlines()
    assert first == "held: transfer [call_1]: transfer runs only after a"
    assert second == "  + reviewer approves the call (policy approval_required)"
    assert arguments_shown(block) == arguments_text({"payload": LONG})
    assert all(len(row) <= 60 for row in block.splitlines())


def test_a_summary_is_whole_or_cut_saying_how_much_was_left_out() -> None:
    whole = call_summary("transfer\u202e", {"payload": LONG})
    assert whole == f'transfer\\u202e({{"payload": "{LONG}"}})'
    cut = call_summary("transfer", {"payload": LONG}, 120)
    assert cut == f'transfer({{"payload": "{LONG[:107]}... ({len(LONG) - 107 + 2} more characters))'


@pytest.fixture
def held_tree(tmp_path: Path) -> Any:
    path = tmp_path / "held.yaml"
    path.write_text(TREE)
    with load_tree(path, tools=[transfer]) as tree:
        yield tree


def test_the_terminal_desk_asks_with_the_reason_and_the_complete_escaped_arguments(
    held_tree: Any,
) -> None:
    asked: list[str] = []

    def ask(prompt: str) -> str:
        asked.append(prompt)
        return "n"

    held_tree.events.subscribe(ApprovalDesk(held_tree, "ask", ask=ask, out=io.StringIO()))
    assert held_tree.run(timeout=30).status.name == "FAILURE"
    (prompt,) = asked
    heading, *_, question = logical_lines(prompt)
    call_id = held_tree.guard.approvals.records()[0].call_id
    assert heading == f"held: transfer [{call_id}]: {REASON} (policy approval_required)"
    assert question == f"approve transfer [{call_id}]? [y/N/e] "
    assert arguments_shown(prompt) == arguments_text(ARGUMENTS)
    assert hidden_characters(prompt) == []


def test_approve_all_says_the_whole_call_it_approved(held_tree: Any) -> None:
    out = io.StringIO()
    held_tree.events.subscribe(ApprovalDesk(held_tree, "all", out=out))
    assert held_tree.run(timeout=30).status.name == "SUCCESS"
    said = out.getvalue()
    assert f"transfer({arguments_text(ARGUMENTS, indent=None)}) [call_" in said
    assert TRICKS_SHOWN in said and hidden_characters(said) == []


def test_resume_asks_with_the_complete_escaped_arguments_and_why_the_call_waits(
    tmp_path: Path,
) -> None:
    path = tmp_path / "held.yaml"
    path.write_text(TREE.replace("tools: [transfer]", "tools: ['money:transfer']"))
    (tmp_path / "money.py").write_text(
        "from jianmu_bt.tools import tool\n\n\n@tool\n"
        "def transfer(note: str, payload: str) -> str:\n"
        '    """Pretend to move money."""\n    return "moved"\n'
    )
    store = ("--store", str(tmp_path / "runs.db"))
    env = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}"}
    paused = jianmu("run", path, *store, "--run-id", "R", "--approve", "later", env=env)
    assert paused.returncode == 3, paused.stdout + paused.stderr
    # The list of waiting calls a reviewer may decide from, and `runs show`: whole and escaped.
    whole = f"transfer({arguments_text(ARGUMENTS, indent=None)})"
    listed = jianmu("runs", "show", "R", *store, env=env)
    for said in (paused.stdout, listed.stdout):
        assert whole in said and hidden_characters(said) == []
    resumed = answering("n\n", "resume", "R", *store, "--approve", "ask", env=env)
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    asked = resumed.stdout.split("Run of 'held'")[0]
    heading, *_, question = logical_lines(asked)
    assert heading.startswith("held: transfer [call_")
    # The guard's own reason and policy, kept on the call's `held` row.
    assert heading.endswith(
        "]: transfer runs only after a reviewer approves the call (policy approval_required)"
    )
    assert question.startswith("approve transfer [call_") and question.endswith("]? [y/N/e] ")
    assert arguments_shown(asked) == arguments_text(ARGUMENTS)
    assert hidden_characters(asked) == []

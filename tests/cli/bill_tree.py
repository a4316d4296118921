"""A tree whose one call (`pay`, from a tool module of its own) is held for approval; each
payment is a line of a ledger file. Shared by the tests of decisions made at the command line."""

from __future__ import annotations

import os
from pathlib import Path

from cli_helpers import REPO

TREE = """
version: 1
name: bill
state:
  receipt: {type: string}
tools: ['money:pay']
guard: {approve: [pay]}
root:
  tool: {name: Pay, tool: pay, arguments: {amount: 5000}, output: receipt}
"""

TOOLS = '''
import os
from jianmu_bt.tools import tool


@tool(effect_tags=["payments"])
def pay(amount: int) -> str:
    """Pay an amount (each payment is a line of the ledger)."""
    with open(os.environ["LEDGER"], "a") as ledger:
        ledger.write(f"{amount}\\n")
    return f"paid {amount}"
'''


def bill_setup(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """Write the tree (bill.yaml) and its tools in `tmp_path`: the `--store` arguments of a
    store there, and the environment the commands run with."""
    (tmp_path / "bill.yaml").write_text(TREE)
    (tmp_path / "money.py").write_text(TOOLS)
    env = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}", "LEDGER": str(tmp_path / "ledger")}
    return ["--store", str(tmp_path / "runs.db")], env


def ledger(tmp_path: Path) -> list[str]:
    """The amounts paid so far, in order."""
    path = tmp_path / "ledger"
    return path.read_text().split() if path.exists() else []

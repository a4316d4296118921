"""What the overlay tests share: paths and a small tree with tool steps, an agent and a guard."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "testing"

TREE = """\
version: 1
name: shop
state:
  numbers: {type: string, default: "2 + 3"}
  total: {type: string}
  note: {type: string}
  answer: {type: string}
tools: [calculator, read_file, write_file]
tool_options: {workspace: .}
llm:
  provider: scripted
  replies: ["the file's own model"]
guard:
  deny: [write_file]
  budgets: {file_read: 2}
root:
  sequence:
    name: Main
    children:
      - tool: {name: Sum, tool: calculator, arguments: {expression: "{numbers}"}, output: total}
      - tool: {name: ReadNote, tool: read_file, arguments: {path: note.txt}, output: note}
      - agent:
          name: Helper
          goal: "Check {total}"
          tools: [calculator, read_file]
          max_iterations: 4
          output: answer
"""

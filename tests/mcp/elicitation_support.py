"""What the elicitation tests share: the asking server, a tree using it, a recorder of the
run's `input.*` events, and a person who answers from a thread of their own."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from mcp_test_support import HERE, PYTHON

from jianmu_bt.loader.tree import Tree
from jianmu_bt.runtime.events import Event

ASKER = str(HERE / "mcp_eliciting_server.py")
HANG_GUARD = 60


def tree_text(options: str, *steps: str, timeout: float = 20) -> str:
    """A tree whose sequence runs `steps` (YAML flow mappings) against the asking server."""
    children = "\n".join(f"      - {step}" for step in steps)
    return f"""
state: {{a: string, b: string, c: string, note: string}}
tools:
  - mcp: {{command: {PYTHON}, args: [{ASKER}], name: asker, timeout: {timeout}, {options}}}
root:
  sequence:
    children:
{children}
"""


class Recorder:
    """The run's `input.*` events, in order."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        if event.type.startswith("input."):
            self.events.append(event)

    def kinds(self) -> list[str]:
        return [event.type for event in self.events]


def wait_for_question(tree: Tree) -> Any:
    deadline = time.monotonic() + HANG_GUARD
    while not tree.pending_questions():
        assert time.monotonic() < deadline, "no question came"
        time.sleep(0.02)
    return tree.pending_questions()[0]


class Person:
    """A person answering in a thread of their own: `act(tree)` runs there; what it raised is
    kept for the test, and a question it left open is cancelled so the run never hangs."""

    def __init__(self, tree: Tree, act: Callable[[Tree], None]) -> None:
        self.tree, self.act = tree, act
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.act(self.tree)
        except BaseException as exc:
            self.errors.append(exc)
            for question in self.tree.pending_questions():
                self.tree.answer(question.id, "cancel")

    def check(self) -> None:
        self.thread.join(HANG_GUARD)
        assert not self.thread.is_alive()
        if self.errors:
            raise self.errors[0]

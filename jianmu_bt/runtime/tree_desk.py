"""A tree's desk for a person: calls held for approval, and questions MCP servers asked the run.

A mixin of every tree (`jianmu_bt.loader.Tree`, `PythonTree`): `pending_approvals`, `approve` and
`reject` decide the calls its guards hold; `pending_questions`, `answer` and `attend_questions`
deal with servers' questions (elicitation). The questions live in the run's
QuestionStore (`jianmu_bt.runtime.questions`); `input.requested` events announce them. A server's
question is asked only while someone attends the tree's questions; otherwise it is declined at
once, so an unattended run never waits on one:

```python
with tree.attend_questions(lambda q: tree.answer(q.id, "accept", {"name": "Ada"})):
    tree.run()
# or, answering from any thread while attending:
with tree.attend_questions():
    ...  # tree.pending_questions(), tree.answer(question.id, "decline")
```
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from jianmu_bt.runtime.outside import WaitingCall, external_calls_of
from jianmu_bt.runtime.questions import Question, questions_of
from jianmu_bt.tools import Tool, ToolCall, ToolSet
from jianmu_bt.tools.argument_schema import edit_refusal

if TYPE_CHECKING:
    from jianmu_bt.runtime.runner import TreeRunner


class EditRefusedError(ValueError):
    """A reviewer's edit of a held call that cannot be approved: its arguments do not fit the
    tool's schema, or a policy of the guard refuses the edited call. The call stays held."""


class TreeDesk:
    """`pending_approvals`, `approve` and `reject` for held calls; `pending_questions`, `answer`
    and `attend_questions` (which says that someone answers them) for servers' questions."""

    runner: TreeRunner
    name: str

    @property
    def guards(self) -> list[Any]:
        """Every guard of the tree."""
        raise NotImplementedError

    def _guard_for(self, call_id: str) -> Any:
        guards = self.guards
        for guard in guards:
            if guard.approvals.get(call_id) is not None:
                return guard
        if not guards:
            raise LookupError(f"tree '{self.name}' has no guard, so nothing awaits approval")
        return guards[0]  # raises the store's own "unknown call id" error

    def approve(
        self,
        call_id: str,
        note: str | None = None,
        *,
        arguments: Mapping[str, Any] | None = None,
        by: str = "api",
    ) -> Any:
        """Approve a held tool call (the run goes on); returns the approval record.

        With `arguments` the call runs with those instead (an edit): they must fit the tool's
        schema and pass every policy of the guard as it stands (EditRefusedError, a
        ValueError, says why not, and the call stays held). The agent is told of the edit. `by`
        names who decided (in the journal and the approval record).
        """
        guard = self._guard_for(call_id)
        record = guard.approvals.get(call_id)
        if arguments is not None and record is not None:
            edited = ToolCall(record.tool, dict(arguments), call_id)
            tool = self.tool_named(record.tool)
            refused = edit_refusal(record.tool, tool, edited.arguments)
            if refused is not None:
                raise EditRefusedError(refused)
            for deciding in self._guards_sharing(guard):
                denied = deciding.refusal(edited, tool)
                if denied is not None:
                    raise EditRefusedError(f"the guard refuses the edited call: {denied.reason}")
        return guard.approvals.approve(call_id, note, arguments=arguments, by=by)

    def reject(self, call_id: str, reason: str, *, by: str = "api") -> Any:
        """Reject a held tool call with a reason the agent is told; returns the record."""
        return self._guard_for(call_id).approvals.reject(call_id, reason, by=by)

    def respond(self, call_id: str, answer: str, *, by: str = "api") -> Any:
        """Answer a held tool call in its place ("respond instead"): it does not run, and the
        agent reads `answer` as its result; returns the record."""
        return self._guard_for(call_id).approvals.respond(call_id, answer, by=by)

    def _guards_sharing(self, guard: Any) -> list[Any]:
        """`guard` and the guards of the tree's nodes that record their held calls in its
        approval store (an agent's own guard layered under the tree's): an edit must pass the
        policies of every level that decides the call."""
        found = [guard]
        for node in self.runner.nodes:
            active = getattr(node, "active_guard", None)
            layered = active() if callable(active) else None
            if (
                layered is not None
                and layered not in found
                and layered.approvals is guard.approvals
            ):
                found.append(layered)
        return found

    def tool_named(self, name: str) -> Tool | None:
        """The tool of that name that a node of the tree calls, or None."""
        for node in self.runner.nodes:
            tool = getattr(node, "tool", None)
            if isinstance(tool, Tool) and tool.name == name:
                return tool
            toolset = getattr(node, "toolset", None)
            found = toolset.get(name) if isinstance(toolset, ToolSet) else None
            if found is not None:
                return found
        return None

    def answer_question(self, question_id: str, value: Any, *, by: str = "api") -> Question:
        """Accept a question with `value`: a plain answer (a choice, a number, text) for an
        `ask` step whose answer is not an object, else the form's fields. Raises as `answer`."""
        question = self.question(question_id)
        return self.answer(question_id, "accept", question.content_of(value), by=by)

    def pending_results(self) -> list[WaitingCall]:
        """The external tools' calls waiting in this process for their results, from any
        thread (a paused run's wait in its store: `jianmu runs waiting`)."""
        return external_calls_of(self.runner.context).pending()

    def supply_result(self, call_id: str, value: Any, *, by: str = "api") -> WaitingCall:
        """Give an external call waiting in this process its result (checked against the
        tool's output schema); the run goes on. OutsideValueError (a ValueError) says why
        not, and the call keeps waiting."""
        return external_calls_of(self.runner.context).supply(call_id, value, by=by)

    @contextmanager
    def attend_results(self) -> Iterator[None]:
        """For the block, a durable run waits in this process for external calls' results
        (given with `supply_result`) instead of pausing."""
        with external_calls_of(self.runner.context).attend():
            yield

    def pending_approvals(self) -> list[Any]:
        """Every tool call waiting for a reviewer, across the tree's guards."""
        return [record for guard in self.guards for record in guard.approvals.pending()]

    def pending_questions(self) -> list[Question]:
        """The questions for a person that wait for an answer (oldest first), from any thread."""
        return questions_of(self.runner.context).pending()

    def question(self, question_id: str) -> Question:
        """The question with this id, open or closed (UnknownQuestionError, a KeyError, when
        there is none)."""
        return questions_of(self.runner.context).get(question_id)

    @contextmanager
    def attend_questions(
        self, on_question: Callable[[Question], None] | None = None, *, in_process: bool = False
    ) -> Iterator[None]:
        """Attend the tree's questions for the duration of the block: servers' questions are
        asked (and wait up to their `timeout` for `answer`) instead of being declined at once,
        and the tree's `ask` steps wait here for their answers. `on_question(question)`, when
        given, is called with each new question, in the run's event loop: answer there, or
        hand it to another thread. `in_process`: `ask` steps are answered here even in a
        durable run that pauses on held calls (`hold="pause"`)."""
        store = questions_of(self.runner.context)
        unsubscribe: Callable[[], None] | None = None
        if on_question is not None:
            handler = on_question

            def announced(event: Any) -> None:
                if event.type == "input.requested":
                    handler(store.get(event.data["question_id"]))

            unsubscribe = self.runner.events.subscribe(announced)
        try:
            with store.attend(in_process=in_process):
                yield
        finally:
            if unsubscribe is not None:
                unsubscribe()

    def answer(
        self,
        question_id: str,
        action: str,
        content: Mapping[str, Any] | None = None,
        *,
        reason: str = "",
        by: str = "api",
    ) -> Question:
        """Answer a question: `accept` with `content` (checked against the server's form),
        `decline` or `cancel`; the server gets the answer at once. Raises
        UnknownQuestionError (a KeyError) or AnswerError (a ValueError: closed question, bad
        action, content that does not fit; the question then stays open)."""
        store = questions_of(self.runner.context)
        return store.answer(question_id, action, content, reason=reason, by=by)

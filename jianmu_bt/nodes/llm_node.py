"""AgentLLMNode: one LLM turn — the conversation and the tool schemas in, a reply and its calls out.

Each entry sends the system prompt, the state's `messages` and the ToolSet's schemas to the run's
LLM provider (`provider=` or `services["llm"]`), then writes in one state update: the assistant
message appended to `messages`, its ToolCalls to `actions`, the answer to `answer_key` when the
reply asks for no tools, and its usage (requests, tokens, tool calls, cost) added to `usage`.
How a reply is taken (a refusal, a cut-off reply, a typed answer that is re-asked when it does not
fit) is `jianmu_bt.nodes.turn_outcome`'s; usage limits (the node's and the run's
`services["limits"]`) are checked before each request (`jianmu_bt.llm.limits`). With
`stream=True` text deltas are emitted as `llm.delta` events (reasoning as `llm.reasoning`) while
the reply arrives. A `prompt` source (an MCP server's
prompt, from the YAML `prompt:` key) supplies messages that go after the system prompt, fetched
again at each entry with the state of then. In a durable run a turn the journal already holds is
replayed from it: neither the prompt nor the LLM is asked again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from jianmu_bt.llm import LLMOptions, LLMProvider, LLMResponse, StreamCompleted, TextDelta
from jianmu_bt.llm.base import ReasoningDelta
from jianmu_bt.llm.limits import UsageLimits
from jianmu_bt.nodes.turn_outcome import TurnPolicy, TurnState, judge, usage_counts
from jianmu_bt.nodes.usage_meter import Scope, UsageMeter
from jianmu_bt.runtime.async_node import AsyncNode
from jianmu_bt.runtime.templates import render
from jianmu_bt.store import JournalEntry, digest_arguments
from jianmu_bt.store.codec import UnrecordableValueError, check
from jianmu_bt.tools import ToolSet

if TYPE_CHECKING:
    from jianmu_bt.runtime.journal import RunJournal

Schemas = list[dict[str, Any]] | None
"""The tool schemas a request offers (None: no tools)."""

Lookup = Callable[[str], Any]
"""A state lookup: a key (or a dotted path into one) -> its value."""

PromptSource = Callable[[Lookup], Awaitable[list[dict[str, Any]]]]
"""`await source(lookup)`: the messages a request starts with (after the system prompt), made
from the state at the time, e.g. an MCP server's prompt (`jianmu_bt.mcp.prompt_source`)."""


class AgentLLMNode(AsyncNode):
    """Asks the LLM for the next step of a conversation kept in state."""

    def __init__(
        self,
        provider: LLMProvider | None = None,
        toolset: ToolSet | None = None,
        name: str = "LLM",
        *,
        system_prompt: str | None = None,
        messages_key: str = "messages",
        actions_key: str = "actions",
        answer_key: str | None = "final_answer",
        usage_key: str | None = "usage",
        options: LLMOptions | Mapping[str, Any] | None = None,
        stream: bool = False,
        timeout: float | None = None,
        prompt: PromptSource | None = None,
        policy: TurnPolicy | None = None,
        limits: UsageLimits | None = None,
    ) -> None:
        super().__init__(name=name, timeout=timeout)
        self.provider = provider
        self.prompt = prompt
        self.toolset = toolset if toolset is not None else ToolSet()
        self.system_prompt = system_prompt
        self.messages_key = messages_key
        self.actions_key = actions_key
        self.answer_key = answer_key
        self.usage_key = usage_key
        if options is not None and not isinstance(options, LLMOptions):
            options = LLMOptions.model_validate(options)
        self.options = options
        self.stream = stream
        self.policy = policy or TurnPolicy()
        self.meter = UsageMeter(limits)  # this node's usage in the run, for its limits
        self.last_response: LLMResponse | None = None
        self.finished = False  # the last entry ended with an answer (no tools asked for)
        self._system_message: dict[str, Any] | None = None
        self._sent = 0  # the messages of the request the last reply answered

    @property
    def limits(self) -> UsageLimits | None:
        """This node's own usage limits."""
        return self.meter.limits

    def resolve_provider(self) -> LLMProvider:
        """The provider given to the node, else the run's `services["llm"]`."""
        provider = self.provider
        if provider is None and self.context is not None:
            provider = self.context.llm
        if provider is None:
            raise RuntimeError(
                f"node '{self.name}' has no LLM provider: pass provider= or set an `llm` "
                "for the tree (services['llm'])"
            )
        return provider

    def build_messages(self, prompt: Sequence[dict[str, Any]] = ()) -> list[dict[str, Any]]:
        """The request's messages: the system prompt (with `{key}` references), the `prompt`
        messages, then the history."""
        history = [*prompt, *(self.state.read_port(self.messages_key) or [])]
        instructions = self._output_instructions()
        if self.system_prompt or instructions:
            text = str(render(self.system_prompt, self.state.get)) if self.system_prompt else ""
            text = "\n\n".join(part for part in (text, instructions) if part)
            system = self._system_message
            if system is None or system["content"] != text:
                # The same dict turn after turn while the text stays: a provider then sees the
                # conversation it already checked, one turn longer (`ConversationCache`).
                system = self._system_message = {"role": "system", "content": text}
            return [system, *history]
        return list(history)

    async def run_async(self) -> bool:
        self.last_response = None
        self.finished = False
        provider = self.resolve_provider()
        if self.context is not None:
            self.meter.start(self.context.run_id)
        seen = TurnState()
        while True:
            response = await self._turn(provider)
            self.last_response = response
            if self.listened:  # the event's data costs a dump of the reply
                self.emit(
                    "llm.response",
                    text=response.text,
                    reasoning=response.reasoning,
                    tool_calls=[call.to_dict() for call in response.tool_calls],
                    usage=response.usage.model_dump(),
                    finish_reason=response.finish_reason,
                    model=response.model,
                    provider=response.provider,
                    cost=response.cost,
                )
            verdict = judge(response, self.policy, seen)
            if verdict.error is None and not verdict.finished and response.has_tool_calls:
                try:
                    self._check_tool_calls(len(response.tool_calls))
                except Exception as exc:
                    verdict.error = exc
            self.state.update(self._updates(response, verdict))
            if verdict.error is not None:
                raise verdict.error
            if not verdict.again:
                self.finished = verdict.finished
                return True

    async def _turn(self, provider: LLMProvider) -> LLMResponse:
        """One reply: from the journal when the run already took this turn, else asked for."""
        journal = self.context.journal if self.context else None
        key = journal.next_key(self.node_key) if journal is not None else ""
        record = journal.recorded(key) if journal is not None else None
        if journal is not None and record is not None and record.status == "cancelled":
            await journal.wait_for_halt()  # the tree cancelled this turn: it will again
        if record is not None and record.status == "failed":
            raise RecordedTurnError(str((record.result or {}).get("error") or "the turn failed"))
        if record is None or record.status != "done":
            return await self._new_turn(provider, journal, key)
        # A turn the run already took: its reply comes from the journal. Neither the prompt nor
        # the request is needed (no second request, no prompts/get of an MCP server).
        response = LLMResponse.model_validate(record.result)
        messages = record.arguments.get("messages")  # the count the turn was taken with
        self._sent = messages if isinstance(messages, int) else 0
        self.emit("llm.request", messages=messages, tools=len(self.toolset), replayed=True)
        replayed = getattr(provider, "replayed", None)
        if callable(replayed):
            replayed(response)
        return response

    async def _new_turn(
        self, provider: LLMProvider, journal: RunJournal | None, key: str
    ) -> LLMResponse:
        """Fetch the prompt, build the request, ask the LLM; journal the outcome (a failure,
        the prompt's included, is recorded so that a replay fails this turn the same way)."""
        messages: list[dict[str, Any]] = []
        try:
            messages = self.build_messages(await self.prompt(self.state.get) if self.prompt else ())
            tools = self.toolset.schemas() if len(self.toolset) else None
            options = self._checked_options(provider, messages, tools)
            self.emit("llm.request", messages=len(messages), tools=len(tools or ()))
            response = await self._ask(provider, messages, tools, options)
            self._sent = len(messages)
        except anyio.get_cancelled_exc_class():
            if journal is not None:
                journal.cancelled(_turn_entry(key, self.node_key, len(messages), None))
            raise
        except Exception as exc:
            if journal is not None:
                error = f"{type(exc).__name__}: {exc}"
                failed = _turn_entry(key, self.node_key, len(messages), None, error)
                journal.write(failed)
            raise
        if journal is not None:
            done = _turn_entry(key, self.node_key, len(messages), response)
            try:
                check(done.result, "reply")
            except UnrecordableValueError as exc:  # failed as its replay will fail
                error = f"the LLM's reply cannot be recorded in the run's journal: {exc}"
                failed = _turn_entry(key, self.node_key, len(messages), None, error)
                journal.write(failed)
                raise RecordedTurnError(error) from None
            journal.write(done)
        return response

    async def _ask(
        self,
        provider: LLMProvider,
        messages: list[dict[str, Any]],
        tools: Schemas,
        options: LLMOptions | None,
    ) -> LLMResponse:
        if self.stream:
            return await self._streamed(provider, messages, tools, options)
        return await provider.complete(messages, tools, options)

    async def _streamed(
        self,
        provider: LLMProvider,
        messages: list[dict[str, Any]],
        tools: Schemas,
        options: LLMOptions | None,
    ) -> LLMResponse:
        response = None
        async for event in provider.stream(messages, tools, options):
            if isinstance(event, TextDelta):
                self.emit("llm.delta", text=event.text)
            elif isinstance(event, ReasoningDelta):
                self.emit("llm.reasoning", text=event.text)
            elif isinstance(event, StreamCompleted):
                response = event.response
        if response is None:
            raise RuntimeError("the LLM stream ended without a completed reply")
        return response

    def _output_instructions(self) -> str:
        """How to answer, for a typed output the provider cannot enforce itself."""
        output = self.policy.output
        if output is None or _native_output(self.provider or self._context_llm()):
            return ""
        return output.instructions()

    def _context_llm(self) -> Any:
        return self.context.llm if self.context is not None else None

    def _checked_options(
        self, provider: LLMProvider, messages: list[dict[str, Any]], tools: Schemas
    ) -> LLMOptions | None:
        """The request's options, after the usage limits allowed it (UsageLimitExceeded
        otherwise): the output room they leave caps `max_tokens`; a typed output is asked for
        (each provider enforces it as it can: natively, by a forced tool, or not at all, when
        the system prompt carries the schema instead)."""
        options = self.options
        output = self.policy.output
        if output is not None:
            native = LLMOptions(
                output_schema=output.schema, output_name=output.name, output_strict=output.strict
            )
            options = native if options is None else options.merged(native)
        return self.meter.request_options(self._limit_scopes(), provider, messages, tools, options)

    def _limit_scopes(self) -> list[Scope]:
        run_limits = self.context.services.get("limits") if self.context is not None else None
        used = None
        if run_limits is not None and self.usage_key and self.usage_key in self.state.fields:
            used = self.state.get(self.usage_key)
        return self.meter.scopes(self.name, run_limits, used)

    def _check_tool_calls(self, count: int) -> None:
        for limits, used, scope in self._limit_scopes():
            limits.check_tool_calls(used, count, scope)

    def _updates(self, response: LLMResponse, verdict: Any) -> dict[str, Any]:
        fields = self.state.fields
        # Calls run only for a reply that goes on with tools (not a refusal taken as the answer).
        going_on = verdict.error is None and not verdict.finished and not verdict.again
        updates: dict[str, Any] = {
            self.messages_key: [response.message, *verdict.messages],
            self.actions_key: list(response.tool_calls) if going_on else [],
        }
        if self.answer_key and verdict.finished:
            updates[self.answer_key] = verdict.answer
        counts = usage_counts(response)
        self.meter.record(response, counts, self._sent)
        if self.usage_key and self.usage_key in fields:
            updates[self.usage_key] = counts
        return updates


def _native_output(provider: Any) -> bool:
    """True when `provider` enforces an output schema itself (`LLMOptions.output_schema`)."""
    return bool(getattr(provider, "native_output", False))


class RecordedTurnError(RuntimeError):
    """An LLM turn that failed when the run first took it, failing the same way on replay."""


def _turn_entry(
    key: str, node: str, messages: int, response: LLMResponse | None, error: str | None = None
) -> JournalEntry:
    """The journal record of one LLM turn: its reply (for replay), its error, or cancelled by
    the tree (neither)."""
    if response is not None:
        # The message and the calls' arguments as they are, not dumped by pydantic (which turns
        # a model or a tuple inside them into a dict or a list): the store's typed encoding keeps
        # them exact, so a replayed reply is the very reply the run took.
        status, result = "done", response.model_dump(exclude={"message", "tool_calls"})
        result["message"] = response.message
        result["tool_calls"] = [call.to_dict() for call in response.tool_calls]
    elif error is not None:
        status, result = "failed", {"error": error}
    else:
        status, result = "cancelled", None
    return JournalEntry(
        key=key,
        call_id=key,
        kind="llm",
        node=node,
        tool="llm",
        arguments={"messages": messages},
        digest=digest_arguments("llm", messages),
        status=status,
        result=result,
    )

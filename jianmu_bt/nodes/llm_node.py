"""AgentLLMNode: one LLM turn — the conversation and the tool schemas in, a reply and its calls out.

Each entry sends the system prompt, the state's `messages` and the ToolSet's schemas to the run's
LLM provider (`provider=` or `services["llm"]`), then writes in one state update: the assistant
message appended to `messages`, its ToolCalls to `actions`, the reply text to `answer_key` when
the reply asks for no tools, and the token usage added to `usage`. With `stream=True` text deltas
are emitted as `llm.delta` events while the reply arrives. A `prompt` source (an MCP server's
prompt, from the YAML `prompt:` key) supplies messages that go after the system prompt, fetched
again at each entry with the state of then. In a durable run a turn the journal already holds is
replayed from it: neither the prompt nor the LLM is asked again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from jianmu_bt.llm import LLMOptions, LLMProvider, LLMResponse, StreamCompleted, TextDelta
from jianmu_bt.runtime.async_node import AsyncNode
from jianmu_bt.runtime.templates import render
from jianmu_bt.store import JournalEntry, digest_arguments
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
        self.last_response: LLMResponse | None = None
        self._system_message: dict[str, Any] | None = None

    @property
    def finished(self) -> bool:
        """True when the last reply asked for no tools: the agent has answered."""
        return self.last_response is not None and not self.last_response.has_tool_calls

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
        if self.system_prompt:
            text = str(render(self.system_prompt, self.state.get))
            system = self._system_message
            if system is None or system["content"] != text:
                # The same dict turn after turn while the text stays: a provider then sees the
                # conversation it already checked, one turn longer (`ConversationCache`).
                system = self._system_message = {"role": "system", "content": text}
            return [system, *history]
        return list(history)

    async def run_async(self) -> bool:
        self.last_response = None
        provider = self.resolve_provider()
        journal = self.context.journal if self.context else None
        key = journal.next_key(self.node_key) if journal is not None else ""
        record = journal.recorded(key) if journal is not None else None
        if journal is not None and record is not None and record.status == "cancelled":
            await journal.wait_for_halt()  # the tree cancelled this turn: it will again
        if record is not None and record.status == "failed":
            raise RecordedTurnError(str((record.result or {}).get("error") or "the turn failed"))
        if record is not None and record.status == "done":
            # A turn the run already took: its reply comes from the journal. Neither the prompt
            # nor the request is needed (no second request, no prompts/get of an MCP server).
            response = LLMResponse.model_validate(record.result)
            messages = record.arguments.get("messages")  # the count the turn was taken with
            self.emit("llm.request", messages=messages, tools=len(self.toolset), replayed=True)
            replayed = getattr(provider, "replayed", None)
            if callable(replayed):
                replayed(response)
        else:
            response = await self._new_turn(provider, journal, key)
        self.last_response = response
        if self.listened:  # the event's data costs a dump of the reply
            self.emit(
                "llm.response",
                text=response.text,
                tool_calls=[call.to_dict() for call in response.tool_calls],
                usage=response.usage.model_dump(),
                finish_reason=response.finish_reason,
            )
        self.state.update(self._updates(response))
        return True

    async def _new_turn(
        self, provider: LLMProvider, journal: RunJournal | None, key: str
    ) -> LLMResponse:
        """Fetch the prompt, build the request, ask the LLM; journal the outcome (a failure,
        the prompt's included, is recorded so that a replay fails this turn the same way)."""
        messages: list[dict[str, Any]] = []
        try:
            messages = self.build_messages(await self.prompt(self.state.get) if self.prompt else ())
            tools = self.toolset.schemas() if len(self.toolset) else None
            self.emit("llm.request", messages=len(messages), tools=len(tools or ()))
            response = await self._ask(provider, messages, tools)
        except anyio.get_cancelled_exc_class():
            if journal is not None:
                journal.cancelled(_turn_entry(key, self.node_key, len(messages), None))
            raise
        except Exception as exc:
            if journal is not None:
                error = f"{type(exc).__name__}: {exc}"
                failed = _turn_entry(key, self.node_key, len(messages), None, error)
                journal.write(failed, full=False)
            raise
        if journal is not None:
            journal.write(_turn_entry(key, self.node_key, len(messages), response), full=False)
        return response

    async def _ask(
        self, provider: LLMProvider, messages: list[dict[str, Any]], tools: Schemas
    ) -> LLMResponse:
        if self.stream:
            return await self._streamed(provider, messages, tools)
        return await provider.complete(messages, tools, self.options)

    async def _streamed(
        self, provider: LLMProvider, messages: list[dict[str, Any]], tools: Schemas
    ) -> LLMResponse:
        response = None
        async for event in provider.stream(messages, tools, self.options):
            if isinstance(event, TextDelta):
                self.emit("llm.delta", text=event.text)
            elif isinstance(event, StreamCompleted):
                response = event.response
        if response is None:
            raise RuntimeError("the LLM stream ended without a completed reply")
        return response

    def _updates(self, response: LLMResponse) -> dict[str, Any]:
        fields = self.state.fields
        updates: dict[str, Any] = {
            self.messages_key: [response.message],
            self.actions_key: list(response.tool_calls),
        }
        if self.answer_key and not response.has_tool_calls:
            updates[self.answer_key] = response.text
        if self.usage_key and self.usage_key in fields:
            usage = response.usage
            updates[self.usage_key] = {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "total_tokens": usage.total_tokens,
            }
        return updates


class RecordedTurnError(RuntimeError):
    """An LLM turn that failed when the run first took it, failing the same way on replay."""


def _turn_entry(
    key: str, node: str, messages: int, response: LLMResponse | None, error: str | None = None
) -> JournalEntry:
    """The journal record of one LLM turn: its reply (for replay), its error, or cancelled by
    the tree (neither)."""
    if response is not None:
        status, result = "done", response.model_dump(mode="json")
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

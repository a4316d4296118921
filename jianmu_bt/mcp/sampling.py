"""MCP sampling answered by the run's LLM, under the run's guard (off unless `sampling:` is set).

A server may ask its client for an LLM completion (`sampling/createMessage`). With
`sampling: true` (or `{max_requests, max_tokens, max_input_chars, timeout}`) on its `mcp:`
entry, a tree answers each request with the run's LLM provider, the same `complete` call an
`llm` node makes:

1. at most `max_requests` requests per run are answered (every request counts, so a server that
   asks in a loop is bounded); later ones are refused naming the option;
2. the run must have an LLM (`llm:` of the tree), else the request is refused saying so;
3. a prompt (system prompt and messages) of more than `max_input_chars` characters is refused
   before the LLM is called, naming the option (the prompt is billed to the tree's account);
4. the run's guard checks the request as a call of the stand-in tool `<server>_sampling` with
   the effect tag `sampling`: `deny`/`allow` lists, `budgets: {sampling: N}` and `rate_limits`
   apply, and an answered request is recorded (`guard.record`). A request the guard would hold
   for a reviewer (`approve:`) or wants confirmed (`confirm:`) is refused: approval of sampling
   is not supported, because the server's request cannot wait for a person (a grant on the
   approval store still lets it through). The check records nothing in the approval store;
5. the LLM gets `timeout` seconds; meanwhile the deadlines of the client's calls in flight are
   held (`MCPClient.deadlines`), so the server's call that asked does not time out while the
   tree's LLM works for it;
6. the reply's text goes back as a `CreateMessageResult` (`maxTokens` capped by `max_tokens`).

A refusal is an MCP error to the server, with the reason: its tool then fails and the tree goes
on. Every request ends in one `mcp.sampling` run event (`server`, `tool`, `outcome` answered,
refused or failed, `reason`, `request`, `max_tokens`, `input_tokens`, `output_tokens`, `model`);
`answered` only once the reply to send is built. Requests of one server in one run are answered
one at a time, so two of them cannot both take a budget's last use.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import anyio

from jianmu_bt.guard.decision import Decision, GuardVerdict
from jianmu_bt.guard.enforcer import GuardEnforcer
from jianmu_bt.guard.layered import LayeredGuard
from jianmu_bt.llm import LLMResponse
from jianmu_bt.mcp.guarded import cannot_wait
from jianmu_bt.mcp.sampling_messages import (
    SamplingRefused,
    request_to_call,
    response_to_result,
    stop_key_of,
)
from jianmu_bt.tools.base import Tool
from jianmu_bt.tools.calls import ToolCall

if TYPE_CHECKING:
    import mcp_types
    from mcp.client.session import ClientRequestContext

    from jianmu_bt.mcp.client import MCPClient
    from jianmu_bt.mcp.config import SamplingOptions
    from jianmu_bt.runtime.context import RunContext
    from jianmu_bt.runtime.services import RunGuard

#: The effect tag of the stand-in tool a sampling request is checked as (`budgets: {sampling: N}`).
SAMPLING_EFFECT = "sampling"
#: The run event each sampling request ends in.
SAMPLING_EVENT = "mcp.sampling"
#: Why a request the guard wants a person to approve is refused.
NO_APPROVAL = (
    "approval of sampling is not supported (the server's request cannot wait for a person): "
    "allow it, grant it, or remove it from `approve:`/`confirm:`"
)


class SamplingFailed(Exception):
    """The tree's LLM did not give a reply to send; the message is what the server is told."""


class SamplingStandIn(Tool):
    """The tool the guard sees for a server's sampling requests: `<server>_sampling`, effect
    `sampling`. It only names the requests; it cannot be called."""

    effect_tags = (SAMPLING_EFFECT,)
    parallel_safe = False

    def __init__(self, server: str) -> None:
        self.name = f"{server}_sampling"
        self.description = f"LLM completions asked for by the MCP server '{server}'"

    def run(self, input: Any) -> Any:
        """Not callable: sampling requests are answered by `SamplingAnswerer`."""
        raise RuntimeError(f"'{self.name}' stands for sampling requests; it cannot be called")


class SamplingAnswerer:
    """The SDK sampling callback of one MCP client in one run (see the module docstring);
    `options` is the client's `sampling:` config."""

    def __init__(self, client: MCPClient, options: SamplingOptions, run: RunContext | None) -> None:
        self.server = client.name
        self.options = options
        self.deadlines = client.deadlines
        self.run = run
        self.tool = SamplingStandIn(self.server)
        self.requests = 0
        self._ids = itertools.count(1)
        self._lock: anyio.Lock | None = None

    async def __call__(
        self, context: ClientRequestContext, params: mcp_types.CreateMessageRequestParams
    ) -> mcp_types.CreateMessageResult | mcp_types.ErrorData:
        """Answer one `sampling/createMessage` request, or refuse it with the reason."""
        import mcp_types

        self.requests += 1
        cap = min(params.max_tokens, self.options.max_tokens)
        try:
            return await self._answer(params)
        except SamplingRefused as exc:
            reason, outcome, code = str(exc), "refused", mcp_types.INVALID_REQUEST
        except SamplingFailed as exc:
            reason, outcome, code = str(exc), "failed", mcp_types.INTERNAL_ERROR
        except Exception as exc:  # e.g. a guard of the caller's own that raised: told, not lost
            reason = f"the request could not be answered: {type(exc).__name__}: {exc}"
            outcome, code = "failed", mcp_types.INTERNAL_ERROR
        self._event(outcome, reason, cap)
        message = f"sampling request refused by the client (jianmu_bt): {reason}"
        return mcp_types.ErrorData(code=code, message=message)

    async def _answer(
        self, params: mcp_types.CreateMessageRequestParams
    ) -> mcp_types.CreateMessageResult:
        limits = self.options
        if self.requests > limits.max_requests:
            raise SamplingRefused(
                f"MCP server '{self.server}' asked for more than {limits.max_requests} "
                "sampling requests in this run (option `sampling: {max_requests: "
                f"{limits.max_requests}}}` of its `mcp:` entry)"
            )
        run = self.run
        llm = run.llm if run is not None else None
        if run is None or llm is None:
            raise SamplingRefused(
                f"the tree has no llm: MCP server '{self.server}' asked for sampling, which a "
                "tree answers with its `llm:` provider; add `llm:` to the tree or remove "
                "`sampling:` from the server's `mcp:` entry"
            )
        messages, options = request_to_call(params, limits, stop_key_of(llm))
        if self._lock is None:  # made in the loop the requests arrive in
            self._lock = anyio.Lock()
        async with self._lock:
            call = ToolCall(
                name=self.tool.name,
                arguments={"max_tokens": options.max_tokens, "messages": len(messages)},
                id=f"{self.tool.name}-{run.run_id}-{next(self._ids)}",
            )
            self._check(run.guard, call)
            ok = False
            try:
                # The server's call waits for this reply: its deadline must not run meanwhile.
                with self.deadlines.held(), anyio.move_on_after(limits.timeout) as scope:
                    response = await llm.complete(messages, None, options)
                    ok = True
            except Exception as exc:
                raise SamplingFailed(f"the tree's llm failed: {type(exc).__name__}: {exc}") from exc
            finally:
                if run.guard is not None:
                    run.guard.record(call, self.tool, ok)
        if scope.cancelled_caught:
            raise SamplingFailed(
                f"the tree's llm did not answer within {limits.timeout:g}s (option "
                f"`sampling: {{timeout: {limits.timeout:g}}}` of the `mcp:` entry of "
                f"'{self.server}')"
            )
        model = str(getattr(llm, "model", None) or "unknown")
        try:
            result = response_to_result(response, model)
        except Exception as exc:
            raise SamplingFailed(
                f"the tree's llm gave a reply that cannot be sent: {type(exc).__name__}: {exc}"
            ) from exc
        self._event("answered", None, options.max_tokens or 0, response, model)
        return result

    def _check(self, guard: RunGuard | None, call: ToolCall) -> None:
        """Refuse the request unless the run's guard allows the stand-in call now."""
        if guard is None:
            return
        verdict = verdict_without_hold(guard, call, self.tool)
        if verdict.allowed:
            return
        why = f"policy {verdict.policy}: {verdict.reason}".rstrip(".")
        if verdict.decision is Decision.DENY:
            raise SamplingRefused(f"the run's guard refused '{call.name}' (deny): {why}")
        raise SamplingRefused(
            f"the run's guard refused '{call.name}' (it needs a person's approval): {why}; "
            f"{NO_APPROVAL}"
        )

    def _event(
        self,
        outcome: str,
        reason: str | None,
        max_tokens: int,
        response: LLMResponse | None = None,
        model: str | None = None,
    ) -> None:
        if self.run is None:
            return
        usage = response.usage if response is not None else None
        self.run.events.emit(
            SAMPLING_EVENT,
            server=self.server,
            tool=self.tool.name,
            outcome=outcome,
            reason=reason,
            request=self.requests,
            max_tokens=max_tokens,
            input_tokens=usage.input_tokens if usage else 0,
            output_tokens=usage.output_tokens if usage else 0,
            model=model,
        )


def verdict_without_hold(guard: RunGuard, call: ToolCall, tool: Tool) -> GuardVerdict:
    """The guard's verdict on `call` now, leaving nothing in its approval store.

    The call is checked without an id, and a hold for a reviewer (PENDING) is decided as CONFIRM:
    both need a person, whom the request cannot wait for, and a grant lifts either (as for
    served calls, `jianmu_bt.mcp.guarded`). A GuardEnforcer or a LayeredGuard is asked policy by
    policy; another guard object through its `check`.
    """
    probe = ToolCall(name=call.name, arguments=call.arguments, id=None)
    if isinstance(guard, LayeredGuard):
        layers = guard.layers  # outer first: its store decides, as LayeredGuard.check does
    elif isinstance(guard, GuardEnforcer):
        layers = [guard]
    else:
        return guard.check(probe, tool)
    verdicts = [v for layer in layers for v in layer.policy_verdicts(probe, tool)]
    return layers[0].decide(probe, tool, [cannot_wait(v) for v in verdicts])


__all__ = [
    "NO_APPROVAL",
    "SAMPLING_EFFECT",
    "SAMPLING_EVENT",
    "SamplingAnswerer",
    "SamplingFailed",
    "SamplingStandIn",
    "verdict_without_hold",
]

"""How each LLM library is driven, as its users write it: one request, and a two-turn tool loop.

`clients(url, stack)` gives one Chat Completions request through each library (ours, litellm,
any-llm, the openai SDK) and bare httpx, for the per-request timing of `bench_llm_providers.py`.

Fidelity: does a client send back what a reasoning model handed out, on the next turn?
Reasoning models give parts the conversation's next request must carry back unchanged, or the
API refuses it (400) or the model loses its train of thought: DeepSeek's `reasoning_content` on
the assistant message, Gemini's `extra_content.google.thought_signature` on each tool call (its
OpenAI-compatible endpoint), Anthropic's `thinking` blocks with their `signature`. Each check runs
two turns through one library's own message handling, as its users write a tool loop: ask, append
the returned message (the library's own object), add the tool's result, ask again. The stand-in
server (`benchmarks/llm_server.py`) hands out the parts on the first turn and records the second
request, which is then read for them.

`fidelity(server)` returns `[(library, route, part, outcome)]`, the outcome one of `kept`,
`dropped`, `altered: ...`, `not installed: ...` or `error: ...`.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import httpx

from benchmarks.llm_server import REASONING, SIGNATURE, LLMServer

PROMPT = "Look up item 0, then answer. turns=2"
REASONING_0 = REASONING.format(n=0)
#: What a user of a thinking model sets.
THINKING: dict[str, Any] = {"type": "enabled", "budget_tokens": 1024}
FUNCTION: dict[str, Any] = {
    "name": "lookup",
    "description": "Look x up.",
    "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
}
TOOL: dict[str, Any] = {"type": "function", "function": FUNCTION}

# The parts, and the model each is served under (the server keys its replies on the name).
REASONING_PART = "reasoning_content (DeepSeek)"
SIGNATURE_PART = "thought_signature (Gemini)"  # its OpenAI-compatible endpoint
THINKING_PART = "thinking+signature (Anthropic)"
DEEPSEEK, GEMINI, CLAUDE = "deepseek-reasoner", "gemini-2.5-flash", "claude-sonnet-4-5"

Run = Callable[[LLMServer], Awaitable[None]]
Call = Callable[[], Awaitable[None]]
MODEL = "bench-model"
MESSAGES = (("system", "You look things up."), ("user", "Look up item 0. turns=2"))

#: litellm fetches its model price list from the internet at import unless told to use its own
#: copy: the benchmarks reach nothing but 127.0.0.1.
OFFLINE = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
PIP_NAMES = {"any_llm": "any-llm-sdk"}


def import_litellm() -> Any:
    """litellm, imported with its own copy of the price list (no download)."""
    os.environ.update(OFFLINE)
    import litellm

    return litellm


def _assistant(body: dict[str, Any]) -> dict[str, Any]:
    return next(m for m in body.get("messages") or [] if m.get("role") == "assistant")


def check(part: str, body: dict[str, Any]) -> str:
    """What the second request did with `part`: kept, dropped, or altered (how)."""
    message = _assistant(body)
    if part == REASONING_PART:
        sent = message.get("reasoning_content")
        return "kept" if sent == REASONING_0 else "dropped" if sent is None else "altered"
    if part == SIGNATURE_PART:
        calls = message.get("tool_calls") or [{}]
        sent = ((calls[0].get("extra_content") or {}).get("google") or {}).get("thought_signature")
        return "kept" if sent == SIGNATURE else "dropped" if sent is None else "altered"
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    thinking = [b for b in blocks if isinstance(b, dict) and b.get("type") == "thinking"]
    if not thinking:
        return "dropped"
    block = thinking[0]
    if block.get("signature") != SIGNATURE:
        return "altered: signature changed"
    if block.get("thinking") != REASONING_0:
        return f"altered: thinking text {block.get('thinking')!r}, signature kept"
    return "kept"


# -- one request --------------------------------------------------------------------------


def request_body() -> dict[str, Any]:
    """A fresh request body (new message objects each time, as a new conversation has)."""
    messages = [{"role": role, "content": text} for role, text in MESSAGES]
    return {"model": MODEL, "messages": messages, "tools": [TOOL]}


async def clients(url: str, stack: AsyncExitStack) -> tuple[dict[str, Call], dict[str, str]]:
    """One request through each client, kept open on `stack`; and why others are missing."""
    calls: dict[str, Call] = {}
    missing: dict[str, str] = {}
    client = await stack.enter_async_context(httpx.AsyncClient())

    async def floor() -> None:
        reply = (await client.post(f"{url}/chat/completions", json=request_body())).json()
        assert reply["choices"][0]["message"]["tool_calls"]

    from jianmu_bt.llm import OpenAICompatibleProvider

    provider = await stack.enter_async_context(OpenAICompatibleProvider(MODEL, url))

    async def ours() -> None:
        reply = await provider.complete(request_body()["messages"], [FUNCTION])
        assert reply.tool_calls

    calls |= {"floor": floor, "ours": ours}
    for library in ("litellm", "any_llm", "openai"):
        if importlib.util.find_spec(library) is None:
            missing[library] = f"not installed (pip install {PIP_NAMES.get(library, library)})"
    if "litellm" not in missing:
        litellm = import_litellm()

        async def via_litellm() -> None:
            body = request_body()
            body["model"] = f"openai/{MODEL}"  # litellm's route for any OpenAI-compatible server
            reply = await litellm.acompletion(api_base=url, api_key="unused", **body)
            assert reply.choices[0].message.tool_calls

        calls["litellm"] = via_litellm
    if "any_llm" not in missing:
        import any_llm

        llm = any_llm.AnyLLM.create("openai", api_key="unused", api_base=url)

        async def via_any_llm() -> None:
            reply = await llm.acompletion(**request_body())
            assert reply.choices[0].message.tool_calls

        async def via_any_llm_function() -> None:
            body = request_body()
            reply = await any_llm.acompletion(
                provider="openai", api_key="unused", api_base=url, **body
            )
            assert reply.choices[0].message.tool_calls

        calls |= {"any_llm": via_any_llm, "any_llm (function)": via_any_llm_function}
    if "openai" not in missing:
        from openai import AsyncOpenAI

        sdk = await stack.enter_async_context(AsyncOpenAI(base_url=url, api_key="unused"))

        async def via_openai() -> None:
            reply = await sdk.chat.completions.create(**request_body())
            assert reply.choices[0].message.tool_calls

        calls["openai"] = via_openai
    return calls, missing


# -- ours ----------------------------------------------------------------------------------


def ours_chat(model: str) -> Run:
    """OpenAICompatibleProvider: `conversation + [reply.message, tool_message(...)]`."""

    async def run(server: LLMServer) -> None:
        from jianmu_bt.llm import OpenAICompatibleProvider, tool_message, user_message

        async with OpenAICompatibleProvider(model=model, base_url=server.base_url) as llm:
            conversation = [user_message(PROMPT)]
            reply = await llm.complete(conversation, [FUNCTION])
            answers = [tool_message(str(c.id), "item 0", name=c.name) for c in reply.tool_calls]
            await llm.complete([*conversation, reply.message, *answers], [FUNCTION])

    return run


async def ours_anthropic(server: LLMServer) -> None:
    """AnthropicProvider with thinking enabled (`LLMOptions.extra`)."""
    from jianmu_bt.llm import AnthropicProvider, LLMOptions, tool_message, user_message

    options = LLMOptions(max_tokens=2048, extra={"thinking": THINKING})
    async with AnthropicProvider(model=CLAUDE, base_url=server.root, options=options) as llm:
        conversation = [user_message(PROMPT)]
        reply = await llm.complete(conversation, [FUNCTION])
        answers = [tool_message(str(c.id), "item 0", name=c.name) for c in reply.tool_calls]
        await llm.complete([*conversation, reply.message, *answers], [FUNCTION])


# -- litellm and any-llm: the OpenAI shape, the returned message object appended --------------


def _tool_results(message: Any) -> list[dict[str, Any]]:
    calls = getattr(message, "tool_calls", None) or []
    return [{"role": "tool", "tool_call_id": c.id, "content": "item 0"} for c in calls]


def litellm_run(model: str, anthropic: bool = False) -> Run:
    """`litellm.acompletion(model="route/name", api_base=...)`, its Message appended."""

    async def run(server: LLMServer) -> None:
        litellm = import_litellm()
        base = server.root if anthropic else server.base_url
        extra = {"thinking": THINKING, "max_tokens": 2048} if anthropic else {}
        messages: list[Any] = [{"role": "user", "content": PROMPT}]
        for _ in range(2):
            reply = await litellm.acompletion(
                model, messages, tools=[TOOL], api_base=base, api_key="unused", **extra
            )
            message = reply.choices[0].message
            messages += [message, *_tool_results(message)]

    return run


def any_llm_run(provider: str, model: str) -> Run:
    """`AnyLLM.create(provider, api_base=...)`, `acompletion`, its ChatCompletionMessage
    appended (any-llm's `messages` take these objects)."""

    async def run(server: LLMServer) -> None:
        from any_llm import AnyLLM

        anthropic = provider == "anthropic"
        base = server.root if anthropic else server.base_url
        llm = AnyLLM.create(provider, api_key="unused", api_base=base)
        extra = {"reasoning_effort": "low"} if anthropic else {}  # any-llm's switch for thinking
        messages: list[Any] = [{"role": "user", "content": PROMPT}]
        for _ in range(2):
            reply = await llm.acompletion(model=model, messages=messages, tools=[TOOL], **extra)
            message = reply.choices[0].message
            messages += [message, *_tool_results(message)]

    return run


# -- the official SDKs, for reference ---------------------------------------------------------


def openai_sdk_run(model: str) -> Run:
    """`AsyncOpenAI.chat.completions.create`, the returned ChatCompletionMessage appended."""

    async def run(server: LLMServer) -> None:
        from openai import AsyncOpenAI

        async with AsyncOpenAI(base_url=server.base_url, api_key="unused") as client:
            messages: list[Any] = [{"role": "user", "content": PROMPT}]
            for _ in range(2):
                reply = await client.chat.completions.create(
                    model=model, messages=messages, tools=[TOOL]
                )
                message = reply.choices[0].message
                messages += [message, *_tool_results(message)]

    return run


async def anthropic_sdk_run(server: LLMServer) -> None:
    """`AsyncAnthropic.messages.create` with thinking; `{"role": "assistant", "content":
    reply.content}` appended, as Anthropic's documentation does."""
    from anthropic import AsyncAnthropic

    tool: dict[str, Any] = {"name": "lookup", "description": "Look x up."}
    tool["input_schema"] = FUNCTION["parameters"]
    async with AsyncAnthropic(base_url=server.root, api_key="unused") as client:
        messages: list[Any] = [{"role": "user", "content": PROMPT}]
        for _ in range(2):
            reply = await client.messages.create(
                model=CLAUDE, max_tokens=2048, thinking=THINKING, tools=[tool], messages=messages
            )
            results = [
                {"type": "tool_result", "tool_use_id": block.id, "content": "item 0"}
                for block in reply.content
                if block.type == "tool_use"
            ]
            messages += [{"role": "assistant", "content": reply.content}]
            if results:
                messages += [{"role": "user", "content": results}]


#: (library, the module it needs, route as a user names it, part, run)
CHECKS: list[tuple[str, str, str, str, Run]] = [
    ("jianmu_bt", "jianmu_bt", "openai_compat", REASONING_PART, ours_chat(DEEPSEEK)),
    ("jianmu_bt", "jianmu_bt", "openai_compat", SIGNATURE_PART, ours_chat(GEMINI)),
    ("jianmu_bt", "jianmu_bt", "anthropic", THINKING_PART, ours_anthropic),
    ("litellm", "litellm", "openai/", REASONING_PART, litellm_run(f"openai/{DEEPSEEK}")),
    ("litellm", "litellm", "deepseek/", REASONING_PART, litellm_run(f"deepseek/{DEEPSEEK}")),
    ("litellm", "litellm", "openai/", SIGNATURE_PART, litellm_run(f"openai/{GEMINI}")),
    ("litellm", "litellm", "anthropic/", THINKING_PART, litellm_run(f"anthropic/{CLAUDE}", True)),
    ("any-llm", "any_llm", "openai", REASONING_PART, any_llm_run("openai", DEEPSEEK)),
    ("any-llm", "any_llm", "deepseek", REASONING_PART, any_llm_run("deepseek", DEEPSEEK)),
    ("any-llm", "any_llm", "openai", SIGNATURE_PART, any_llm_run("openai", GEMINI)),
    ("any-llm", "any_llm", "anthropic", THINKING_PART, any_llm_run("anthropic", CLAUDE)),
    ("openai SDK", "openai", "chat", REASONING_PART, openai_sdk_run(DEEPSEEK)),
    ("openai SDK", "openai", "chat", SIGNATURE_PART, openai_sdk_run(GEMINI)),
    ("anthropic SDK", "anthropic", "messages", THINKING_PART, anthropic_sdk_run),
]


async def fidelity(server: LLMServer) -> list[tuple[str, str, str, str]]:
    """Every check's outcome: (library, route, part, outcome)."""
    outcomes = []
    for library, module, route, part, run in CHECKS:
        if importlib.util.find_spec(module) is None:
            outcome = f"not installed: pip install {PIP_NAMES.get(module, module)}"
        else:
            server.reset()
            try:
                await run(server)
                outcome = check(part, server.requests()[-1]["body"])
            except Exception as exc:  # a library that fails the loop is a finding, not a crash
                outcome = f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
        outcomes.append((library, route, part, outcome))
    return outcomes

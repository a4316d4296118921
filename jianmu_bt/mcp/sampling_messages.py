"""An MCP `sampling/createMessage` request as a call of our LLM providers, and the reply back.

`request_to_call` turns the request's `messages`, `systemPrompt`, `maxTokens` (capped),
`temperature` and `stopSequences` into OpenAI-shaped messages and `LLMOptions`, and refuses a
prompt longer than `max_input_chars`; `response_to_result` turns the provider's `LLMResponse`
into a `CreateMessageResult`. Only text is carried: a message with image, audio or tool content,
or a request that offers tools, is refused with a `SamplingRefused` naming what is not supported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jianmu_bt.llm import LLMOptions, LLMResponse

if TYPE_CHECKING:
    import mcp_types

    from jianmu_bt.mcp.config import SamplingOptions

#: Our providers' finish reasons as MCP stop reasons (others are passed on as they are).
STOP_REASONS = {"stop": "endTurn", "length": "maxTokens", "tool_calls": "toolUse"}


class SamplingRefused(Exception):
    """A sampling request that is not answered; the message is what the server is told."""


def request_to_call(
    params: mcp_types.CreateMessageRequestParams, limits: SamplingOptions, stop_key: str
) -> tuple[list[dict[str, Any]], LLMOptions]:
    """The messages and options of the LLM call that answers `params`.

    `maxTokens` is lowered to `limits.max_tokens`; a prompt (system prompt and messages) of more
    than `limits.max_input_chars` characters is refused. Stop sequences go in the request-body
    key `stop_key` (see `stop_key_of`).
    """
    if params.tools:
        raise SamplingRefused(
            "sampling with tools is not supported by this client (only text messages)"
        )
    messages: list[dict[str, Any]] = []
    if params.system_prompt:
        messages.append({"role": "system", "content": params.system_prompt})
    for index, message in enumerate(params.messages):
        messages.append({"role": message.role, "content": _text_of(message.content, index)})
    if not params.messages:
        raise SamplingRefused("the sampling request has no messages")
    size = sum(len(message["content"]) for message in messages)
    if size > limits.max_input_chars:
        # Checked before the LLM is called: the prompt is billed to the tree's account.
        raise SamplingRefused(
            f"the sampling request's prompt has {size} characters, more than the "
            f"{limits.max_input_chars} allowed (option `sampling: {{max_input_chars: "
            f"{limits.max_input_chars}}}` of the server's `mcp:` entry)"
        )
    extra: dict[str, Any] = {}
    if params.stop_sequences:
        extra[stop_key] = list(params.stop_sequences)
    options = LLMOptions(
        max_tokens=max(1, min(params.max_tokens, limits.max_tokens)),
        temperature=params.temperature
        if params.temperature is None
        else max(0.0, params.temperature),
        extra=extra,
    )
    return messages, options


def stop_key_of(llm: object) -> str:
    """The request-body key in which `llm` takes stop sequences: `stop_sequences` when it speaks
    Anthropic's Messages API (its `vendor` is Anthropic's: `AnthropicProvider`, its subclasses,
    and wrappers that pass `vendor` on), else `stop` (OpenAI-compatible APIs)."""
    from jianmu_bt.llm.anthropic import ANTHROPIC

    return "stop_sequences" if getattr(llm, "vendor", None) == ANTHROPIC else "stop"


def _text_of(content: Any, index: int) -> str:
    """The text of one sampling message's content (a block or a list of blocks)."""
    blocks = content if isinstance(content, list) else [content]
    texts = []
    for block in blocks:
        kind = getattr(block, "type", type(block).__name__)
        if kind != "text":
            raise SamplingRefused(
                f"sampling message {index} has {kind} content; this client answers sampling "
                "with text messages only"
            )
        texts.append(block.text)
    return "\n".join(texts)


def response_to_result(response: LLMResponse, model: str) -> mcp_types.CreateMessageResult:
    """The MCP result for a provider's reply: assistant text, the model's name, the stop
    reason in MCP's words (`endTurn`, `maxTokens`, ...)."""
    import mcp_types

    reason = response.finish_reason
    return mcp_types.CreateMessageResult(
        role="assistant",
        content=mcp_types.TextContent(type="text", text=response.text),
        model=response.model or model,
        stop_reason=STOP_REASONS.get(reason, reason) if reason else "endTurn",
    )


__all__ = [
    "STOP_REASONS",
    "SamplingRefused",
    "request_to_call",
    "response_to_result",
    "stop_key_of",
]

"""The manifest of the recorded-traffic corpus: which published archive holds which recording.

Every recording is a test cassette that another project recorded against the real provider API
and ships inside its published source distribution. ``corpus.ensure_corpus()`` downloads the
archives below with pip (``pip download --no-deps --no-binary NAME NAME==VERSION``), checks
their sha256, and extracts the listed paths into a cache outside the checkout. Nothing of the
recordings is committed here. See README.md for the upstream projects and their licences.

``vendor`` is the wire format: ``anthropic`` (Messages API), ``openai_chat`` (Chat Completions,
also DeepSeek's), ``openai_responses`` (Responses API), ``gemini`` (generateContent /
streamGenerateContent), ``bedrock_converse`` (Converse / ConverseStream). An entry whose
interactions span two providers (a conversation resumed on another model) names the vendor of
the interaction it is kept for; each interaction's URI tells its own.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Archive:
    """One published archive (sdist or npm tarball) the corpus reads recordings from."""

    manager: str  # "pypi" | "npm"
    name: str
    version: str
    filename: str
    sha256: str
    project: str  # the upstream repository
    licence: str  # as its package metadata states it
    size: int  # bytes of the archive

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.manager, self.name, self.version)


@dataclass(frozen=True)
class Source:
    """One recording: a cassette file inside an archive."""

    id: str
    manager: str
    package: str
    version: str
    path: str  # the member's path inside the archive, top directory included
    vendor: str
    shows: str


ARCHIVES: tuple[Archive, ...] = (
    Archive(
        "pypi", "langchain-anthropic", "1.7.10", "langchain_anthropic-1.7.10.tar.gz",
        "72869686960b3d6665f99e7c91c9f6dd4a1d9ccf73d23edd8702eb603cc2e498",
        "https://github.com/langchain-ai/langchain (libs/partners/anthropic)", "MIT", 768017,
    ),
    Archive(
        "pypi", "langchain-openai", "1.8.1", "langchain_openai-1.8.1.tar.gz",
        "d046911c1cd88e36005090ae47dbd5883deb2991657376ee9c1a9f69fa1f0bac",
        "https://github.com/langchain-ai/langchain (libs/partners/openai)", "MIT", 3384926,
    ),
    Archive(
        "pypi", "langchain-aws", "1.9.1", "langchain_aws-1.9.1.tar.gz",
        "e594476409f7fd41ae0989179866758338f7e5a9abbee93c0b2cff528aee2bb8",
        "https://github.com/langchain-ai/langchain-aws (libs/aws)", "MIT", 834162,
    ),
    Archive(
        "pypi", "mirascope", "2.8.2", "mirascope-2.8.2.tar.gz",
        "743079786d5015a8953e4221d99333b54a59d24272ae365d8a9b4ffb89c8d7c9",
        "https://github.com/Mirascope/mirascope (python/)", "MIT", 22595250,
    ),
    Archive(
        "pypi", "chatlas", "0.23.0", "chatlas-0.23.0.tar.gz",
        "4392b1ae91e8fb02841e5dfa70a9559a4c9a602f6dc40897fcee4f5215038446",
        "https://github.com/posit-dev/chatlas", "MIT", 13456480,
    ),
)  # fmt: skip

_LCA = ("pypi", "langchain-anthropic", "1.7.10", "langchain_anthropic-1.7.10/tests/cassettes/")
_LCO = ("pypi", "langchain-openai", "1.8.1", "langchain_openai-1.8.1/tests/cassettes/")
_LCW = ("pypi", "langchain-aws", "1.9.1", "langchain_aws-1.9.1/tests/cassettes/")
_MIR = ("pypi", "mirascope", "2.8.2", "mirascope-2.8.2/tests/e2e/")
_CHL = ("pypi", "chatlas", "0.23.0", "chatlas-0.23.0/tests/_vcr/")


def _s(where: tuple[str, str, str, str], path: str, id: str, vendor: str, shows: str) -> Source:
    manager, package, version, prefix = where
    return Source(id, manager, package, version, prefix + path, vendor, shows)


SOURCES: tuple[Source, ...] = (
    # -- Anthropic Messages API ----------------------------------------------------------------
    _s(_LCA, "test_thinking.yaml.gz", "anthropic/thinking", "anthropic",
       "extended thinking: [0] JSON thinking(+signature)+text; [1] the same streamed "
       "(thinking_delta, signature_delta); [2] next turn sending the thinking block back"),
    _s(_LCA, "test_redacted_thinking.yaml.gz", "anthropic/redacted_thinking", "anthropic",
       "redacted_thinking blocks (opaque data): [0] JSON, [1] SSE with three of them, "
       "[2] a follow-up turn that sends them back"),
    _s(_MIR, "input/cassettes/test_resume_with_override_thinking_and_tools/"
       "google_gemini_2_5_flash.yaml", "anthropic/thinking_tool_use", "anthropic",
       "[0] Anthropic JSON thinking+text+tool_use (stop tool_use) with thinking on; "
       "[1] the conversation resumed on Gemini (generateContent)"),
    _s(_MIR, "output/cassettes/test_call_with_thinking/anthropic_claude_sonnet_4_0/stream.yaml",
       "anthropic/thinking_stream_long", "anthropic",
       "two streamed turns with thinking (200 and 32 events); turn 2 sends turn 1's signed "
       "thinking back"),
    _s(_LCA, "test_agent_loop.yaml.gz", "anthropic/agent_loop", "anthropic",
       "two-turn tool loop, JSON: tool_use (stop tool_use), then tool_result -> text"),
    _s(_LCA, "test_agent_loop_streaming.yaml.gz", "anthropic/agent_loop_stream", "anthropic",
       "the same loop streamed: input_json_delta of a tool_use, then text"),
    _s(_MIR, "output/cassettes/test_call_with_tools/anthropic_claude_sonnet_4_0/sync.yaml",
       "anthropic/parallel_tool_use", "anthropic",
       "text + two parallel tool_use blocks in one JSON answer, then the two results -> text"),
    _s(_MIR, "output/cassettes/test_call_with_tools/anthropic_claude_sonnet_4_0/stream.yaml",
       "anthropic/parallel_tool_use_stream", "anthropic",
       "the same streamed: text block then two tool_use blocks (indexes 1, 2)"),
    _s(_CHL, "test_provider_anthropic/test_anthropic_tool_variations_parallel.yaml",
       "anthropic/parallel_tool_use_stream_2", "anthropic",
       "streamed: two tool_use blocks and nothing else, then the answer"),
    _s(_LCA, "test_programmatic_tool_use_streaming.yaml.gz",
       "anthropic/server_and_client_tool_stream", "anthropic",
       "one SSE stream mixing a server_tool_use (code_execution) block and a client tool_use "
       "block called from it (stop tool_use); [1] code_execution_tool_result + text"),
    _s(_LCA, "test_tool_search.yaml.gz", "anthropic/server_and_client_tool", "anthropic",
       "JSON: text, server_tool_use (tool_search), tool_search_tool_result, text, client "
       "tool_use (stop tool_use); then the answer"),
    _s(_LCA, "test_web_search.yaml.gz", "anthropic/web_search", "anthropic",
       "server web search: server_tool_use + web_search_tool_result (encrypted_content) + "
       "cited text blocks; [0] JSON, [1] SSE (214 events), [2] follow-up turn"),
    _s(_CHL, "test_provider_anthropic/test_anthropic_web_search_streaming.yaml",
       "anthropic/web_search_stream", "anthropic",
       "streamed server_tool_use/web_search_tool_result/text (no ping), then a follow-up"),
    _s(_MIR, "output/cassettes/test_max_tokens/anthropic_claude_sonnet_4_0/sync.yaml",
       "anthropic/max_tokens", "anthropic", "JSON answer cut at max_tokens (stop max_tokens)"),
    _s(_MIR, "output/cassettes/test_max_tokens/anthropic_claude_sonnet_4_0/stream.yaml",
       "anthropic/max_tokens_stream", "anthropic",
       "streamed answer whose message_delta says stop_reason max_tokens"),
    _s(_LCA, "TestAnthropicStandard.test_stream_time.yaml.gz", "anthropic/long_text_stream",
       "anthropic", "one long text stream (151 events, 145 text deltas) for chunking tests"),
    _s(_MIR, "input/cassettes/test_authentication_error/anthropic_claude_sonnet_4_0.yaml",
       "anthropic/error_401", "anthropic", "401 authentication_error body"),
    _s(_MIR, "input/cassettes/test_model_not_found/anthropic_claude_sonnet_4_0.yaml",
       "anthropic/error_404", "anthropic", "404 not_found_error (unknown model), twice"),
    # -- OpenAI Chat Completions --------------------------------------------------------------
    _s(_MIR, "output/cassettes/test_refusal/openai_gpt_4o_completions/sync.yaml",
       "openai_chat/refusal", "openai_chat",
       "json_schema request refused: message.refusal set, content null, finish stop"),
    _s(_MIR, "output/cassettes/test_refusal/openai_gpt_4o_completions/stream.yaml",
       "openai_chat/refusal_stream", "openai_chat",
       "the refusal streamed: delta.refusal pieces (first delta refusal \"\"), usage chunk"),
    _s(_MIR, "output/cassettes/test_max_tokens/openai_gpt_4o_completions/sync.yaml",
       "openai_chat/length", "openai_chat", "finish_reason length (max_tokens), JSON"),
    _s(_MIR, "output/cassettes/test_max_tokens/openai_gpt_4o_completions/stream.yaml",
       "openai_chat/length_stream", "openai_chat", "finish_reason length, streamed"),
    _s(_MIR, "output/cassettes/test_max_tokens/openai_gpt_5_mini_completions/sync.yaml",
       "openai_chat/length_empty", "openai_chat",
       "gpt-5-mini spent max_completion_tokens on reasoning: content \"\", finish length"),
    _s(_MIR, "output/cassettes/test_call_with_tools/openai_gpt_4o_completions/sync.yaml",
       "openai_chat/parallel_tool_calls", "openai_chat",
       "two parallel tool_calls (finish tool_calls), results, answer; three rounds"),
    _s(_MIR, "output/cassettes/test_call_with_tools/openai_gpt_4o_completions/stream.yaml",
       "openai_chat/parallel_tool_calls_stream", "openai_chat",
       "the same streamed: tool_calls deltas with index 0 and 1"),
    _s(_CHL, "test_provider_openai_completions/test_openai_tool_variations.yaml",
       "openai_chat/tool_calls_stream", "openai_chat",
       "eleven streamed turns: single, no-argument, several and parallel tool calls"),
    _s(_MIR, "output/cassettes/test_structured_output/strict/openai_gpt_4o_completions/sync.yaml",
       "openai_chat/json_schema", "openai_chat",
       "response_format json_schema (strict) answered with JSON content"),
    _s(_MIR, "output/cassettes/test_structured_output/strict/openai_gpt_4o_completions/"
       "stream.yaml", "openai_chat/json_schema_stream", "openai_chat",
       "the same streamed"),
    _s(_MIR, "input/cassettes/test_authentication_error/openai_gpt_4o_completions.yaml",
       "openai_chat/error_401", "openai_chat", "401 invalid_request_error (bad key)"),
    _s(_MIR, "input/cassettes/test_model_not_found/openai_gpt_4o_completions.yaml",
       "openai_chat/error_404", "openai_chat", "404 model_not_found, twice"),
    # -- DeepSeek (Chat Completions wire format, thinking mode) -------------------------------
    _s(_CHL, "test_provider_deepseek/test_deepseek_tool_variations.yaml",
       "deepseek/thinking_tool_calls_stream", "openai_chat",
       "deepseek-v4-flash thinking mode: streamed reasoning_content then tool_calls; the next "
       "requests send the assistant turn back with reasoning_content + tool_calls"),
    _s(_CHL, "test_provider_deepseek/test_deepseek_respects_turns_interface.yaml",
       "deepseek/thinking_multi_turn_stream", "openai_chat",
       "three streamed turns of reasoning_content + content"),
    _s(_CHL, "test_provider_deepseek/test_deepseek_simple_request.yaml",
       "deepseek/thinking_stream", "openai_chat",
       "one streamed answer: role chunk with reasoning_content \"\", reasoning, content, usage"),
    # -- OpenAI Responses API -----------------------------------------------------------------
    _s(_LCO, "test_reasoning.yaml.gz", "openai_responses/reasoning", "openai_responses",
       "reasoning item + message: [0] JSON, [1] SSE"),
    _s(_LCO, "test_stream_encrypted_reasoning.yaml.gz",
       "openai_responses/encrypted_reasoning_stream", "openai_responses",
       "include reasoning.encrypted_content, store false: streamed reasoning item with "
       "encrypted_content; [1] the next turn sending it back"),
    _s(_LCO, "test_stream_reasoning_summary.yaml.gz", "openai_responses/reasoning_summary_stream",
       "openai_responses", "reasoning summary streamed (reasoning_summary_text.delta x312)"),
    _s(_LCO, "test_agent_loop.yaml.gz", "openai_responses/agent_loop", "openai_responses",
       "function_call item, then function_call_output -> message"),
    _s(_LCO, "test_agent_loop_streaming.yaml.gz", "openai_responses/agent_loop_stream",
       "openai_responses", "reasoning + function_call streamed, then the answer streamed"),
    _s(_LCO, "test_function_calling.yaml.gz", "openai_responses/function_calling",
       "openai_responses", "function_call JSON and SSE; [2] web_search_call + message"),
    _s(_LCO, "test_phase.yaml.gz", "openai_responses/phase", "openai_responses",
       "reasoning, message (commentary phase) and function_call in one output"),
    _s(_CHL, "test_provider_openai/test_openai_tool_variations.yaml",
       "openai_responses/tool_calls_stream", "openai_responses",
       "eleven streamed turns incl. two parallel function_call items"),
    _s(_LCO, "test_incomplete_response.yaml.gz", "openai_responses/incomplete",
       "openai_responses", "status incomplete, incomplete_details max_output_tokens: JSON, SSE"),
    _s(_MIR, "output/cassettes/test_refusal/openai_gpt_4o_responses/sync.yaml",
       "openai_responses/refusal", "openai_responses", "message item with a refusal part"),
    _s(_MIR, "output/cassettes/test_refusal/openai_gpt_4o_responses/stream.yaml",
       "openai_responses/refusal_stream", "openai_responses",
       "response.refusal.delta / response.refusal.done events"),
    _s(_LCO, "test_parsed_pydantic_schema.yaml.gz", "openai_responses/json_schema",
       "openai_responses", "text.format json_schema: JSON and SSE"),
    _s(_MIR, "input/cassettes/test_model_not_found/openai_gpt_4o_responses.yaml",
       "openai_responses/error_400", "openai_responses", "400 for an unknown model"),
    # -- Gemini generateContent / streamGenerateContent ---------------------------------------
    _s(_MIR, "input/cassettes/test_strict_mode_with_tools/google_gemini_3_pro_preview.yaml",
       "gemini/gemini3_tool_call", "gemini",
       "gemini-3-pro-preview: functionCall part with thoughtSignature; the next request sends "
       "it back with a functionResponse"),
    _s(_MIR, "input/cassettes/test_strict_mode_with_tools_streamed/"
       "google_gemini_3_pro_preview.yaml", "gemini/gemini3_tool_call_stream", "gemini",
       "the same over streamGenerateContent?alt=sse"),
    _s(_MIR, "input/cassettes/test_strict_mode_with_thinking/google_gemini_3_pro_preview.yaml",
       "gemini/gemini3_thinking", "gemini",
       "includeThoughts: a thought part and a text part carrying the thoughtSignature"),
    _s(_MIR, "input/cassettes/test_strict_mode_with_streamed_thinking/"
       "google_gemini_3_pro_preview.yaml", "gemini/gemini3_thinking_stream", "gemini",
       "thought parts then text streamed; the signature rides on the last text chunk"),
    _s(_CHL, "test_provider_google/test_tools_parallel.yaml", "gemini/parallel_calls_stream",
       "gemini", "two parallel functionCall parts, only the first with a thoughtSignature"),
    _s(_CHL, "test_provider_google/test_tools_sequential.yaml", "gemini/sequential_calls_stream",
       "gemini", "three rounds: functionCall, functionCall, answer (signatures sent back)"),
    _s(_MIR, "output/cassettes/test_call_with_tools/google_gemini_2_5_flash/sync.yaml",
       "gemini/parallel_calls", "gemini",
       "gemini-2.5-flash JSON: two functionCall parts (first signed), results, answer"),
    _s(_MIR, "output/cassettes/test_call_with_thinking/google_gemini_2_5_flash/stream.yaml",
       "gemini/thinking_stream", "gemini", "thought:true text parts streamed before the answer"),
    _s(_MIR, "output/cassettes/test_max_tokens/google_gemini_2_5_flash/sync.yaml",
       "gemini/max_tokens", "gemini", "finishReason MAX_TOKENS"),
    _s(_MIR, "input/cassettes/test_authentication_error_stream/google_gemini_2_5_flash.yaml",
       "gemini/error_400_stream", "gemini",
       "400 API_KEY_INVALID to a streaming request: text/event-stream, plain JSON body"),
    _s(_MIR, "input/cassettes/test_model_not_found/google_gemini_2_5_flash.yaml",
       "gemini/error_404", "gemini", "404 NOT_FOUND for an unknown model"),
    # -- Bedrock Converse ---------------------------------------------------------------------
    _s(_LCW, "test_agent_loop[v0].yaml.gz", "bedrock/agent_loop", "bedrock_converse",
       "Converse: toolUse (stopReason tool_use), then toolResult -> text"),
    _s(_LCW, "test_agent_loop_streaming[v0].yaml.gz", "bedrock/agent_loop_stream",
       "bedrock_converse",
       "[0] ConverseStream (binary AWS event stream): text + toolUse deltas; [1] Converse"),
    _s(_LCW, "test_thinking[v0].yaml.gz", "bedrock/thinking", "bedrock_converse",
       "[0] ConverseStream with reasoningContent deltas (text, signature); [1] Converse "
       "reasoningContent.reasoningText {text, signature}"),
)  # fmt: skip

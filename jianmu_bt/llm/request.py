"""One provider-neutral request: checked messages, tool schemas and resolved options.

Every provider starts from `prepare_request`, so bad input is reported the same way whichever
vendor is behind it, and before any network traffic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from jianmu_bt.llm.base import LLMOptions, ToolsInput
from jianmu_bt.llm.errors import InvalidRequestError, LLMConfigurationError
from jianmu_bt.llm.history import ConversationCache, Transcript
from jianmu_bt.llm.messages import normalize_messages
from jianmu_bt.tools import Tool, ToolSet
from jianmu_bt.tools.base import normalize_parameters

TOOL_CHOICE_WORDS = ("auto", "none", "required")
EMPTY_PARAMETERS = {"type": "object", "properties": {}}


@dataclass(frozen=True, slots=True)
class PreparedRequest:
    """What a provider turns into its wire format.

    `tools` are `{"name", "description", "parameters"}` dicts; `options` are the provider's
    defaults merged with the call's; `model` is the model to ask for (never empty). `messages`
    may be shared with other requests of the same conversation (read them, never change them);
    `transcript`, when the provider keeps a `ConversationCache`, is where they come from.
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    options: LLMOptions
    model: str
    transcript: Transcript | None = None


def tool_schemas(tools: ToolsInput) -> list[dict[str, Any]]:
    """Function-calling schemas from a ToolSet, Tools, or schema dicts.

    Schema dicts may be ours (`{"name", "description", "parameters"}`) or OpenAI's
    (`{"type": "function", "function": {...}}`); parameters always come out as an object schema.
    """
    if tools is None:
        return []
    if isinstance(tools, ToolSet):
        return tools.schemas()
    if isinstance(tools, (Tool, Mapping, str, bytes)):
        raise InvalidRequestError(
            f"tools must be a ToolSet or a list of tools/schemas, got a single "
            f"{type(tools).__name__} (wrap it in a list)"
        )
    schemas: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, item in enumerate(tools):
        if isinstance(item, Tool):
            schema = item.to_schema()
        elif isinstance(item, Mapping):
            source = item.get("function") if item.get("type") == "function" else item
            if not isinstance(source, Mapping) or not source.get("name"):
                raise InvalidRequestError(f"tools[{i}]: a tool schema needs a 'name'")
            schema = {
                "name": str(source["name"]),
                "description": str(source.get("description") or ""),
                # No parameters means a tool without arguments, not one string argument.
                "parameters": normalize_parameters(source.get("parameters") or EMPTY_PARAMETERS),
            }
        else:
            raise InvalidRequestError(
                f"tools[{i}] must be a Tool or a schema dict, got {type(item).__name__}"
            )
        if schema["name"] in seen:
            raise InvalidRequestError(f"tools[{i}]: two tools are named {schema['name']!r}")
        seen.add(schema["name"])
        schemas.append(schema)
    return schemas


def check_tool_choice(choice: str | None, schemas: Sequence[Mapping[str, Any]]) -> None:
    """Raise InvalidRequestError unless `choice` is a word or the name of a tool in `schemas`."""
    if choice is None or choice in TOOL_CHOICE_WORDS:
        if choice == "required" and not schemas:
            raise InvalidRequestError("tool_choice 'required' was given but no tools were")
        return
    names = [schema["name"] for schema in schemas]
    if choice not in names:
        raise InvalidRequestError(
            f"tool_choice {choice!r} is neither one of {', '.join(TOOL_CHOICE_WORDS)} nor a tool "
            f"of this request (tools: {', '.join(names) or 'none'})"
        )


def prepare_request(
    messages: Sequence[Mapping[str, Any]],
    tools: ToolsInput,
    options: LLMOptions | None,
    defaults: LLMOptions,
    *,
    missing_model_hint: str,
    conversations: ConversationCache | None = None,
) -> PreparedRequest:
    """Check and combine one call's input; `missing_model_hint` says how to set a model.

    With `conversations`, only the messages it has not seen in an earlier request are checked.
    """
    if options is not None and not isinstance(options, LLMOptions):
        if isinstance(options, Mapping):
            try:
                options = LLMOptions(**options)
            except ValidationError as exc:
                raise InvalidRequestError(f"options: {exc}") from None
        else:
            raise InvalidRequestError(
                f"options must be LLMOptions or a dict, got {type(options).__name__}"
            )
    merged = defaults.merged(options)
    schemas = tool_schemas(tools)
    check_tool_choice(merged.tool_choice, schemas)
    if not merged.model:
        raise LLMConfigurationError(f"no model to ask for: {missing_model_hint}")
    if conversations is None:
        checked = normalize_messages(messages)
        return PreparedRequest(checked, schemas, merged, merged.model)
    transcript = conversations.normalize(messages)
    checked = transcript.messages[: transcript.length]  # the request's own list
    return PreparedRequest(checked, schemas, merged, merged.model, transcript)

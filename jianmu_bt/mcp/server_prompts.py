"""MCP prompts from prompt templates (a served tree's `llm`/`agent` system prompts and goals).

A `PromptSpec` is a name, a description, messages whose texts are templates with `{key}`
references (`jianmu_bt.runtime.templates`), and one argument per referenced key. `prompts/get`
fills the references from the client's arguments, then from each argument's default; a required
argument that is missing, or an unknown prompt, is an "invalid params" error naming it.

MCP prompt messages have only the roles `user` and `assistant`: a system prompt is sent as the
first `user` message (the SDKs' own prompt helpers do the same).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from jianmu_bt.runtime.templates import TemplateError, references, render


@dataclass(frozen=True)
class PromptArgument:
    """A value a prompt's templates refer to."""

    name: str
    description: str = ""
    required: bool = True
    default: Any = None


@dataclass(frozen=True)
class PromptSpec:
    """One prompt: `messages` are `(role, template)` pairs, `role` "user" or "assistant"."""

    name: str
    description: str
    messages: tuple[tuple[str, str], ...]
    arguments: tuple[PromptArgument, ...] = field(default=())

    @staticmethod
    def from_templates(
        name: str,
        description: str,
        messages: Sequence[tuple[str, str]],
        known: Mapping[str, PromptArgument] | None = None,
    ) -> PromptSpec:
        """A spec whose arguments are the keys its templates refer to, in order of first use;
        `known` gives their descriptions, whether they are required and their defaults."""
        names: list[str] = []
        for _, template in messages:
            for key in sorted(references(template)):
                if key not in names:
                    names.append(key)
        known = known or {}
        arguments = tuple(known.get(key, PromptArgument(key)) for key in names)
        return PromptSpec(name, description, tuple(messages), arguments)

    def render(self, values: Mapping[str, Any]) -> list[tuple[str, str]]:
        """The messages with their references filled (ValueError naming what is missing)."""
        filled = {a.name: a.default for a in self.arguments if a.default is not None}
        filled.update({k: v for k, v in values.items() if v is not None})
        missing = [a.name for a in self.arguments if a.required and a.name not in filled]
        if missing:
            raise ValueError(f"prompt '{self.name}' needs argument(s): {', '.join(missing)}")

        def lookup(key: str) -> Any:
            if key not in filled:
                raise TemplateError(f"prompt '{self.name}' has no value for '{key}'")
            return filled[key]

        try:
            return [(role, str(render(text, lookup))) for role, text in self.messages]
        except TemplateError as exc:
            raise ValueError(str(exc)) from None


class ServedPrompts:
    """Prompt specs as MCP prompts (a `ServerPart` for `build_mcp_server(extras=...)`)."""

    changes_resources = False
    changes_prompts = False

    def __init__(self, specs: Sequence[PromptSpec]) -> None:
        self.specs = {spec.name: spec for spec in specs}
        if len(self.specs) != len(specs):
            raise ValueError("two prompts have the same name")

    def handlers(self) -> dict[str, Any]:
        """`on_list_prompts` and `on_get_prompt`."""
        return {"on_list_prompts": self._list, "on_get_prompt": self._get}

    async def _list(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=spec.name,
                    description=spec.description or None,
                    arguments=[
                        types.PromptArgument(
                            name=a.name, description=a.description or None, required=a.required
                        )
                        for a in spec.arguments
                    ],
                )
                for spec in self.specs.values()
            ]
        )

    async def _get(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types
        from mcp import MCPError

        spec = self.specs.get(params.name)
        if spec is None:
            available = ", ".join(self.specs) or "none"
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Unknown prompt: {params.name}; available: {available}",
            )
        try:
            messages = spec.render(dict(params.arguments or {}))
        except ValueError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
        return types.GetPromptResult(
            description=spec.description or None,
            messages=[
                types.PromptMessage(
                    role=cast(Literal["user", "assistant"], role),
                    content=types.TextContent(type="text", text=text),
                )
                for role, text in messages
            ],
        )


__all__ = ["PromptArgument", "PromptSpec", "ServedPrompts"]

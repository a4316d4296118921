"""MCPServerConfig: how to reach one MCP server (the `mcp:` entry of a YAML `tools` list).

```yaml
tools:
  - mcp: {command: mcp-server-time, args: [--local-timezone, UTC], prefix: time}
  - mcp: {url: "http://127.0.0.1:8000/mcp", headers: {Authorization: "Bearer ..."}}
```
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 30.0
DEFAULT_CONNECT_TIMEOUT = 30.0
#: Bytes of a stdio server's stderr kept (the latest ones) for error messages.
DEFAULT_STDERR_LIMIT = 64 * 1024
#: Bytes one message from a stdio server may take (a longer line faults the connection).
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
#: Seconds a stdio server gets to exit after its stdin closes, and again after SIGTERM.
DEFAULT_STOP_GRACE = 2.0
#: Fields that shape a provider's tool list rather than the connection.
PROVIDER_FIELDS = frozenset({"prefix", "include", "resources"})
#: What `sampling:` takes, for its error message and description.
SAMPLING_SHAPES = "`true`, `false` or `{max_requests, max_tokens, max_input_chars, timeout}`"


class SamplingOptions(BaseModel):
    """How a server's `sampling/createMessage` requests are answered (`sampling:` of an `mcp:`
    entry; `true` takes these defaults). They are answered by the run's LLM provider, each one
    checked by the run's guard as a call of `<server>_sampling` (effect tag `sampling`).

    Every request is billed to the tree's LLM account, so each one is bounded: how many per run,
    the tokens of its reply, the size of its prompt, and how long the LLM may take."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_requests: int = Field(
        default=10, ge=1, le=10_000, description="sampling requests answered per run"
    )
    max_tokens: int = Field(
        default=1024, ge=1, le=1_000_000, description="cap on each request's `maxTokens`"
    )
    max_input_chars: int = Field(
        default=50_000,
        ge=1,
        le=10_000_000,
        description="characters of one request's prompt (system prompt and messages) answered; "
        "a larger request is refused",
    )
    timeout: float = Field(
        default=120.0,
        gt=0,
        le=3600,
        description="seconds the LLM may take to answer one request (the server's call waits: "
        "its `timeout` does not run meanwhile)",
    )


class ElicitationOptions(BaseModel):
    """How a server's `elicitation/create` requests (questions for a person) are answered
    (`elicitation:` of an `mcp:` entry; a bare mode such as `decline` sets only the mode).

    `ask`: the run's approval desk asks a person (`jianmu run --approve ask`; declined when
    nobody answers within `timeout`, and at once when no desk attends the run's questions);
    `decline`: always declined (unattended runs); `off`: the capability is not declared, so the
    server must not ask."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["ask", "decline", "off"] = "ask"
    max_requests: int = Field(
        default=10, ge=1, le=10_000, description="questions a server may ask per run"
    )
    timeout: float = Field(
        default=300.0,
        gt=0,
        le=3600,
        allow_inf_nan=False,
        description="seconds a question waits for an answer (at most an hour)",
    )

    @model_validator(mode="before")
    @classmethod
    def _yaml_off(cls, data: Any) -> Any:
        # YAML reads a bare `off` as false: `elicitation: off` and `{mode: off}` mean the mode.
        if data is False:
            return {"mode": "off"}
        if isinstance(data, Mapping) and data.get("mode") is False:
            return {**data, "mode": "off"}
        return data


class MCPServerConfig(BaseModel):
    """One MCP server: a command to spawn (stdio) or a URL (streamable HTTP), plus options.

    | field             | meaning                                                               |
    |-------------------|-----------------------------------------------------------------------|
    | `transport`       | `stdio` (a command), `http` (streamable HTTP) or `sse` (legacy) a URL |
    | `name`            | the server's name in messages and clash errors (default: derived)     |
    | `command`, `args` | the program that runs the server over stdio                           |
    | `env`, `cwd`      | extra environment (over a minimal safe one) and working directory     |
    | `url`, `headers`  | a streamable HTTP endpoint and the headers to send with every request |
    | `prefix`          | prepended to each tool name as `prefix_name`, to avoid clashes        |
    | `include`         | only these server tools (by their name on the server)                 |
    | `timeout`         | seconds one request (list, call) may take                             |
    | `connect_timeout` | seconds starting the server and the handshake may take                |
    | `stderr_limit`    | bytes of a stdio server's stderr kept in memory (the latest ones)     |
    | `max_message_bytes` | bytes one message (line) of a stdio server may take (16 MiB)        |
    | `stop_grace`      | seconds a stdio server gets to exit on close, and again after SIGTERM |
    | `progress_resets_timeout` | a progress notification restarts the call's `timeout` (idle) |
    | `roots`           | directories offered to the server as roots (`roots/list`)           |
    | `resources`       | the server's resources as tools for agents (list, read)             |
    | `sampling`        | answer sampling requests with the run's LLM (off; SamplingOptions)  |
    | `elicitation`     | answer questions for a person (ask/decline/off; ElicitationOptions) |
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    transport: Literal["stdio", "http", "sse"] = Field(
        default="stdio",
        description="`stdio` for a command; `http` (streamable HTTP, the default for a URL) or "
        "`sse` (the legacy HTTP+SSE transport) for a URL",
    )
    name: str | None = None
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    prefix: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]+$")
    include: list[str] | None = None
    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0)
    connect_timeout: float = Field(default=DEFAULT_CONNECT_TIMEOUT, gt=0)
    stderr_limit: int = Field(default=DEFAULT_STDERR_LIMIT, ge=1024, le=64 * 1024 * 1024)
    max_message_bytes: int = Field(
        default=DEFAULT_MAX_MESSAGE_BYTES, ge=1024, le=1024 * 1024 * 1024
    )
    stop_grace: float = Field(default=DEFAULT_STOP_GRACE, ge=0, le=60)
    progress_resets_timeout: bool = False
    roots: list[str] | None = None
    resources: bool = Field(
        default=False,
        description="offer the server's resources to agents as `<prefix>_list_resources` and "
        "`<prefix>_read_resource` tools",
    )
    sampling: SamplingOptions | None = Field(
        default=None,
        description="answer the server's sampling requests with the run's LLM (off by default; "
        f"{SAMPLING_SHAPES})",
    )
    elicitation: ElicitationOptions = Field(
        default_factory=ElicitationOptions,
        description="answer the server's questions for a person: ask (the approval desk), "
        "decline, off; or {mode, max_requests, timeout}",
    )

    @model_validator(mode="before")
    @classmethod
    def _default_transport(cls, data: Any) -> Any:
        # The transport follows from `command` / `url` unless it is given.
        if isinstance(data, Mapping) and data.get("transport") is None:
            data = {**data, "transport": "http" if data.get("url") is not None else "stdio"}
        return data

    @field_validator("sampling", mode="before")
    @classmethod
    def _sampling_switch(cls, value: Any) -> Any:
        # `sampling: true` takes the defaults; `false` (like leaving it out) turns it off.
        if value is True:
            return SamplingOptions()
        if value is False or value is None:
            return None
        if not isinstance(value, (Mapping, SamplingOptions)):
            raise ValueError(f"`sampling` takes {SAMPLING_SHAPES}, got {value!r}")
        return value

    @field_validator("elicitation", mode="before")
    @classmethod
    def _elicitation_mode(cls, value: Any) -> Any:
        return {"mode": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("an MCP server needs exactly one of `command` (stdio) or `url` (HTTP)")
        if (self.transport == "stdio") != (self.command is not None):
            raise ValueError(
                f"`transport: {self.transport}` does not fit "
                + ("`command` (that is stdio)" if self.command else "`url` (use http or sse)")
            )
        if self.command is not None:
            if not self.command.strip():
                raise ValueError("`command` is empty")
            if self.headers:
                raise ValueError("`headers` apply to an HTTP server (`url`), not to `command`")
        if self.url is not None:
            parts = urlsplit(self.url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(f"`url` must be an http(s) URL, got {self.url!r}")
            if self.args or self.env or self.cwd:
                raise ValueError("`args`, `env` and `cwd` apply to `command`, not to an HTTP `url`")
        return self

    @property
    def label(self) -> str:
        """The name used in messages: `name`, else the command's file name, else the URL's host."""
        if self.name:
            return self.name
        if self.command is not None:
            return os.path.basename(self.command)
        return urlsplit(self.url or "").netloc

    def describe(self) -> str:
        """The command line or URL, for error messages."""
        if self.command is not None:
            return " ".join([self.command, *self.args])
        return str(self.url)

    @classmethod
    def coerce(cls, value: MCPServerConfig | Mapping[str, Any]) -> MCPServerConfig:
        """A config from a config or a mapping (validated)."""
        return value if isinstance(value, cls) else cls.model_validate(dict(value))

    def with_roots_from(
        self, base_dir: str | os.PathLike[str], workspace: str | os.PathLike[str] | None
    ) -> MCPServerConfig:
        """This config as a tree file uses it: relative `roots` taken from `base_dir` (the
        file's folder), and the tree's `workspace` as the root when `roots` is not given
        (`roots: []` offers none). A workspace that is not a directory (yet) is not offered,
        with a warning; a given root that is not one stays an error (when the client is made).
        """
        if self.roots is None:
            roots = None
            if workspace is not None:
                if os.path.isdir(os.path.expanduser(workspace)):
                    roots = [os.fspath(workspace)]
                else:
                    logger.warning(
                        "MCP server '%s': the workspace %s is not a directory; no roots offered",
                        self.label,
                        os.fspath(workspace),
                    )
        else:
            roots = [os.path.join(base_dir, os.path.expanduser(root)) for root in self.roots]
        return self.model_copy(update={"roots": roots})

    def client_options(self) -> dict[str, Any]:
        """The fields an MCPClient takes (all but the provider's `prefix` and `include`)."""
        return self.model_dump(exclude=set(PROVIDER_FIELDS))

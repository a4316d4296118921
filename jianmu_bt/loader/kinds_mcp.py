"""The node kind that reads an MCP server's resource into state: `mcp_resource`.

```yaml
tools:
  - mcp: {command: mcp-server-everything, args: [stdio], name: demo}
root:
  mcp_resource: {server: demo, uri: "demo://resource/dynamic/text/{index}", output: text}
```
`server:` names an `mcp:` entry of `tools:` by its `name:` or `prefix:`; the analysis checks it
(`NodeIO.servers`, `jianmu_bt.loader.servers`) without starting anything. The behaviour lives in
the MCP layer (`jianmu_bt.mcp.resource_node`), imported when a tree is built. (The `prompt:` key
of `llm` and `agent` nodes is theirs: `kinds_work`, `kinds_agent`.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from jianmu_bt.loader.model import NodeConfig, StateKey, Text
from jianmu_bt.loader.node_facts import NodeIO
from jianmu_bt.loader.registry import NodeKind, register_kind
from jianmu_bt.loader.servers import server_provider
from jianmu_bt.loader.template_refs import template_refs

if TYPE_CHECKING:
    from py_trees.behaviour import Behaviour

    from jianmu_bt.loader.context import BuildContext
    from jianmu_bt.loader.records import NodeRecord


class MCPResourceConfig(NodeConfig):
    """Reads a resource of one of the tree's MCP servers into state (text, or parsed JSON)."""

    server: Text = Field(description="The MCP server: the `name:` or `prefix:` of an `mcp:` entry.")
    uri: Text = Field(description="The resource's URI; may hold {key} references to state.")
    output: StateKey | None = Field(None, description="Write the resource's contents here.")
    as_: Literal["text", "json"] = Field(
        "text", alias="as", description="Write the contents as text, or parsed as JSON."
    )
    until: Literal["updated"] | None = Field(
        None,
        description="`updated`: subscribe, wait until the server announces an update of the "
        "resource, then read it.",
    )
    wait: float | None = Field(
        None, gt=0, description="Seconds to wait for the update (default 60)."
    )
    max_chars: int | None = Field(
        None,
        gt=0,
        description="Most characters written (default 1,000,000): a longer text is cut and "
        "says so; a longer JSON resource is an error.",
    )
    timeout: float | None = Field(None, gt=0, description="Seconds the whole step may take.")

    @model_validator(mode="after")
    def _wait_needs_until(self) -> MCPResourceConfig:
        if self.wait is not None and self.until is None:
            raise ValueError(
                "`wait` goes with `until: updated` (it bounds the wait for the update)"
            )
        return self


def _resource_io(config: MCPResourceConfig) -> NodeIO:
    io = NodeIO(servers=[(config.server, ("server",))])
    io.reads.update(template_refs(config.uri, ("uri",)))
    if config.output:
        io.writes[config.output] = ("output",)
        if config.as_ == "text":
            io.text_writes.append((config.output, ("output",)))
    return io


def _resource(record: NodeRecord, children: list[Behaviour], ctx: BuildContext) -> Behaviour:
    from jianmu_bt.mcp.resource_node import MCPResourceNode  # the MCP layer loads on use

    config = record.config_as(MCPResourceConfig)
    provider = server_provider(config.server, ctx, ("server",))
    keys = record.keys
    return MCPResourceNode(
        provider.client,
        keys.template(config.uri),
        name=record.name,
        server=config.server,
        output_key=keys(config.output) if config.output else None,
        parse=config.as_,
        until_updated=config.until == "updated",
        wait=config.wait,
        max_chars=config.max_chars,
        timeout=config.timeout,
    )


def _short_uri(config: MCPResourceConfig) -> str:
    uri = config.uri if len(config.uri) <= 40 else "..." + config.uri[-37:]
    return f"read {uri}"


register_kind(
    NodeKind(
        "mcp_resource",
        MCPResourceConfig,
        "action",
        _resource,
        io=_resource_io,
        default_name=_short_uri,
    )
)

"""The callbacks that answer an MCP server's own requests during a run: sampling, elicitation.

A server may ask its client for an LLM completion (`sampling/createMessage`) or for a person's
input (`elicitation/create`). In a tree, both are answered on behalf of the run: sampling by the
run's LLM provider under its guard (`jianmu_bt.mcp.sampling`, off unless the `mcp:` entry says
`sampling:`), elicitation by the run's approval desk (`jianmu_bt.mcp.elicitation`, unless the
entry says `elicitation: off`). The callbacks are given to the SDK client before it connects, so
the capabilities are declared in the handshake; a request without a callback is not declared.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jianmu_bt.mcp.elicitation import elicitation_callback
from jianmu_bt.mcp.sampling import SamplingAnswerer

if TYPE_CHECKING:
    from jianmu_bt.mcp.client import MCPClient
    from jianmu_bt.runtime.context import RunContext


def request_callbacks(client: MCPClient, run: RunContext | None) -> dict[str, Any]:
    """The SDK `Client` callbacks for `client`'s config and `run` (None: no run to answer for)."""
    callbacks: dict[str, Any] = {}
    elicit = elicitation_callback(client, run)  # None for `elicitation: off`
    if elicit is not None:
        callbacks["elicitation_callback"] = elicit
    sampling = client.config.sampling
    if sampling is not None:
        callbacks["sampling_callback"] = SamplingAnswerer(client, sampling, run)
    return callbacks


__all__ = ["request_callbacks"]

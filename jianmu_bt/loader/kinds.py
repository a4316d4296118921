"""The built-in node kinds: importing this module registers them (in this order).

The kinds register themselves with the registry when their module is imported; the registry
imports none of them. The loader's entry points (`api`) import this module, so the built-in
kinds are there before any file is validated.
"""

from __future__ import annotations

# The import order is the registration order, which messages and the JSON Schema list the
# kinds in: control flow first, then the working kinds, the agent loop, the MCP resource step.
# isort: off
from jianmu_bt.loader import (
    kinds_flow,
    kinds_work,
    kinds_agent,
    kinds_handoff,
    kinds_mcp,
    kinds_human,
)

# isort: on

BUILTIN_KIND_MODULES = (
    kinds_flow,
    kinds_work,
    kinds_agent,
    kinds_handoff,
    kinds_mcp,
    kinds_human,
)
"""The modules that register the built-in kinds, in registration order."""

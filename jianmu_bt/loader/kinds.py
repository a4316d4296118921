"""The built-in node kinds: importing this module registers them (in this order).

The kinds register themselves with the registry when their module is imported; the registry
imports none of them. The loader's entry points (`api`) import this module, so the built-in
kinds are there before any file is validated.
"""

from __future__ import annotations

from jianmu_bt.loader import kinds_flow, kinds_work

BUILTIN_KIND_MODULES = (kinds_flow, kinds_work)
"""The modules that register the built-in kinds: control flow first, then the working kinds."""

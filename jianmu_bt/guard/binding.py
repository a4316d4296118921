"""Binding approvals and grants to the call they were given for: a digest of tool and arguments.

A reviewer approves one call, not one call id: `arguments_digest(tool, arguments)` names the call
(canonical tool name and arguments) so an approval or a grant used under an id cannot be replayed
by another call that repeats the id with another tool or other arguments.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from jianmu_bt.guard.names import canonical_tool_name

#: Hex characters kept of the sha256 (128 bits).
DIGEST_LENGTH = 32


def arguments_digest(tool: str, arguments: Any) -> str:
    """A stable digest of one call: sha256 of the canonical JSON of `[canonical tool, arguments]`.

    Keys are sorted and whitespace dropped, so the same call always gives the same digest, also
    after a JSON round trip (a snapshot). Values JSON cannot encode are written with `str`.
    Arguments that cannot be written as sorted JSON at all (keys of mixed types, cycles) fall
    back to `repr`, which still tells different calls apart.
    """
    pair = [canonical_tool_name(tool), arguments]
    try:
        text = json.dumps(
            pair, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
        )
    except (TypeError, ValueError):
        text = "repr:" + repr(pair)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_LENGTH]

"""Roots: the directories a client offers an MCP server (`roots/list`).

A server may ask which parts of the file system it should work in. The client answers with the
directories of its `roots` option (in a tree: the tree's workspace unless the entry says
otherwise) as `file://` URIs; a client without roots does not declare the capability, so a
server asking anyway gets the SDK's "List roots not supported" error.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def root_paths(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The roots as absolute, resolved directories (ValueError naming one that is not)."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser().resolve()
        if not path.is_dir():
            raise ValueError(f"MCP root {os.fspath(raw)!r} is not a directory ({path})")
        found.append(path)
    return found


def roots_callback(paths: Sequence[str | os.PathLike[str]]) -> Any:
    """The SDK's `list_roots_callback` answering with `paths` (checked now, listed per ask)."""
    resolved = root_paths(paths)

    async def list_roots(_context: Any) -> Any:
        import mcp_types as types

        roots = [
            types.Root.model_validate({"uri": path.as_uri(), "name": path.name or str(path)})
            for path in resolved
        ]
        return types.ListRootsResult(roots=roots)

    return list_roots


__all__ = ["root_paths", "roots_callback"]

"""The state keys a node's `{key}` templates read, found in the config without rendering it.

A kind's `io` hook lists them as state reads (`NodeIO.reads`), each with the path of the first
string that names it, so the analysis can point at the exact place of an unknown key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jianmu_bt.loader.positions import Path
from jianmu_bt.runtime.templates import REFERENCE


def template_refs(value: Any, path: Path) -> dict[str, Path]:
    """Each state key referenced as `{key}` in `value` -> the path of the first string naming it."""
    found: dict[str, Path] = {}
    if isinstance(value, str):
        for match in REFERENCE.finditer(value):
            if match.group(1):
                found.setdefault(match.group(1).split(".")[0], path)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            for ref, where in template_refs(item, (*path, str(key))).items():
                found.setdefault(ref, where)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            for ref, where in template_refs(item, (*path, index)).items():
                found.setdefault(ref, where)
    return found


__all__ = ["template_refs"]

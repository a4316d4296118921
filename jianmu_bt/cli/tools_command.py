"""`jianmu tools [FILE]`: the built-in tools (or a tree's tools) with their schemas."""

from __future__ import annotations

import argparse
import json
from typing import Any

from jianmu_bt.cli.subcommand import add_command

HELP = "list the built-in tools, or a tree's tools, with their schemas"
EPILOG = """\
examples:
  jianmu tools                         # every built-in, whether it is available here, and why not
  jianmu tools trees/file_audit.yaml   # the tools that tree configures
  jianmu tools --json                  # full specs (JSON Schemas) for scripts and editors
"""


def add_parser(commands: Any) -> None:
    """Register `tools` on the top-level subparsers."""
    parser = add_command(commands, "tools", help=HELP, epilog=EPILOG, handler=handle)
    parser.add_argument("file", nargs="?", metavar="FILE", help="a YAML tree: list its tools")
    parser.add_argument("--json", action="store_true", help="print full specs as JSON")


def _builtin_entries() -> list[dict[str, Any]]:
    from jianmu_bt.tools import BuiltinToolProvider
    from jianmu_bt.tools.registry import ToolUnavailableError

    aliases: dict[str, list[str]] = {}
    for alias, name in BuiltinToolProvider.list_aliases().items():
        aliases.setdefault(name, []).append(alias)
    entries = []
    for name, reason in BuiltinToolProvider.availability().items():
        spec = None
        if reason is None:
            try:
                spec = BuiltinToolProvider.build(name).spec()
            except ToolUnavailableError as exc:
                reason = str(exc)
            except Exception as exc:  # another package's tool: listed as broken, not fatal
                reason = f"built-in tool '{name}' is not available: {type(exc).__name__}: {exc}"
        entries.append(
            {
                "name": name,
                "available": reason is None,
                "reason": reason,
                "aliases": sorted(aliases.get(name, [])),
                "spec": spec,
            }
        )
    return entries


def _tree_entries(path: str) -> tuple[str, list[dict[str, Any]]]:
    from jianmu_bt.cli.loading import load_tree_file

    tree = load_tree_file(path)
    try:
        entries = [
            {"name": t.name, "available": True, "reason": None, "aliases": [], "spec": t.spec()}
            for t in tree.toolset
        ]
        return tree.name, entries
    finally:
        tree.close()


def _parameters(spec: dict[str, Any]) -> str:
    params = spec.get("parameters") or {}
    required = set(params.get("required") or ())
    parts = []
    for name, schema in (params.get("properties") or {}).items():
        kind = schema.get("type") or (
            "any"
            if not schema.get("anyOf")
            else "|".join(str(option.get("type", "?")) for option in schema["anyOf"])
        )
        parts.append(f"{name}: {kind}" + ("" if name in required else " (optional)"))
    return ", ".join(parts) or "(none)"


def _describe(entry: dict[str, Any]) -> list[str]:
    aliases = f"  (aliases: {', '.join(entry['aliases'])})" if entry["aliases"] else ""
    if not entry["available"]:
        return [f"{entry['name']}  [unavailable]{aliases}", f"    why: {entry['reason']}"]
    spec = entry["spec"]
    description = (spec.get("description") or "").strip().split("\n")[0]
    effects = ", ".join(spec.get("effects") or ()) or (
        "none" if spec.get("read_only") else "unknown (none declared)"
    )
    if spec.get("read_only"):
        effects += " (read-only)"
    elif spec.get("idempotent"):
        effects += " (idempotent)"
    return [
        f"{entry['name']}{aliases}",
        f"    {description}",
        f"    parameters: {_parameters(spec)}",
        f"    effects: {effects}; parallel-safe: {'yes' if spec.get('parallel_safe') else 'no'}",
    ]


def handle(args: argparse.Namespace) -> int:
    """Print the tools (0), or a clear error for a missing or broken tree file (1)."""
    if args.file:
        title, entries = _tree_entries(args.file)
        heading = f"tools of tree '{title}' ({len(entries)}):"
    else:
        entries = _builtin_entries()
        ready = sum(1 for e in entries if e["available"])
        heading = f"built-in tools ({ready} of {len(entries)} available here):"
    if args.json:
        print(json.dumps(entries, indent=2, default=str))
        return 0
    print(heading)
    for entry in entries:
        print("\n".join(f"  {line}" for line in _describe(entry)))
    return 0

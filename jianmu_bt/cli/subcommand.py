"""How a `jianmu` subcommand registers itself: one parser, its help and examples, its handler."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def add_command(
    commands: Any,
    name: str,
    *,
    help: str,
    epilog: str,
    handler: Callable[[argparse.Namespace], int],
    description: str | None = None,
) -> argparse.ArgumentParser:
    """Add subcommand `name` to `commands` (subparsers); its options are added to the result.

    `description` defaults to `help`; `epilog` (the examples) keeps its line breaks.
    """
    parser = commands.add_parser(
        name,
        help=help,
        description=help if description is None else description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(handler=handler)
    return parser

"""`MCPToolProvider(...)` in Python takes the options docs/mcp.md lists, `name` included."""

from __future__ import annotations

import inspect
import re
import sys

import pytest
from mcp_test_support import ROOT, SERVER_ENV

from jianmu_bt.mcp import MCPClient, MCPToolProvider

DOC = ROOT / "docs" / "mcp.md"


def documented_options() -> list[str]:
    """The option names in the first column of the table after "Options (the same fields"."""
    text = DOC.read_text(encoding="utf-8")
    table = text.split("Options (the same fields as `MCPServerConfig`", 1)[1].split("\n\n")[1]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    return [name for row in rows for name in re.findall(r"`(\w+)`", row.split("|")[1])]


def test_name_names_the_server_as_server_name_does():
    provider = MCPToolProvider(command=sys.executable, args=["-c", "pass"], name="y")
    assert provider.server_name == "y" and provider.given_name == "y"
    assert provider.client.config.name == "y"
    assert MCPToolProvider(command=sys.executable, server_name="y").server_name == "y"


def test_name_goes_with_a_client_too():
    client = MCPClient(command=sys.executable, env=SERVER_ENV)
    assert MCPToolProvider(client, name="ours").server_name == "ours"


def test_two_different_names_are_refused():
    with pytest.raises(TypeError, match="server_name or name"):
        MCPToolProvider(command=sys.executable, name="a", server_name="b")


def test_every_documented_option_is_a_keyword_of_the_provider_or_its_client():
    options = documented_options()
    assert {"command", "name", "server_name", "prefix", "elicitation"} <= set(options)
    accepted = {
        *inspect.signature(MCPToolProvider).parameters,
        *inspect.signature(MCPClient).parameters,
    }
    assert [option for option in options if option not in accepted] == []

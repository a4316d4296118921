"""Without the `mcp` SDK: the package imports, and using it says how to install the SDK."""

from __future__ import annotations

import subprocess
import sys

import pytest
from mcp_test_support import SERVER_ENV

from jianmu_bt import ToolSet
from jianmu_bt.mcp import MCPClient, MCPUnavailableError, build_mcp_server

pytestmark = pytest.mark.anyio

HIDE_SDK = "import sys; sys.modules['mcp'] = None; sys.modules['mcp_types'] = None; "


def test_the_package_imports_without_the_sdk() -> None:
    code = HIDE_SDK + "import jianmu_bt.mcp as m; print(m.MCPToolProvider.__name__)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=SERVER_ENV
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "MCPToolProvider"


async def test_connecting_without_the_sdk_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(MCPUnavailableError, match=r"pip install 'jianmu-bt\[mcp\]'"):
        await MCPClient(command="mcp-server-time").connect()


def test_building_a_server_without_the_sdk_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(MCPUnavailableError, match="official `mcp` SDK"):
        build_mcp_server(ToolSet())

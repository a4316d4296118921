"""Attack class 10 (network): code-running tools are offline unless the tree or the tool opts in.

Each test starts a real TCP server on 127.0.0.1 and asks `bash` / `python_repl` to read its
greeting. By default the sandbox they run in has its own empty network namespace, so the greeting
never arrives; `network=True` on the tool (a constructor option, so a tree's `tool_options` or
`{builtin: bash, options: {network: true}}` reach it) opens it again.
"""

from __future__ import annotations

import pytest
import sandbox_test_tools as tools
from sandbox_helpers import GREETING, IMAGE

from jianmu_bt.sandbox import DockerSandbox, LocalSandbox, SandboxLimits, SandboxUnavailableError
from jianmu_bt.tools import ToolSet
from jianmu_bt.tools.builtin.bash import BashTool
from jianmu_bt.tools.builtin.python_repl import PythonREPLTool
from jianmu_bt.tools.registry import BuiltinToolProvider

pytestmark = pytest.mark.anyio


def bash_reads(port: int) -> dict:
    return {"command": f"exec 3<>/dev/tcp/127.0.0.1/{port} && head -n 1 <&3", "timeout": 10}


def python_reads(port: int) -> dict:
    code = (
        "import socket\n"
        f"with socket.create_connection(('127.0.0.1', {port}), timeout=5) as s:\n"
        "    print(s.recv(100).decode())\n"
    )
    return {"code": code}


async def test_bash_cannot_reach_a_local_server_by_default(server_port):
    result = await BashTool().call(bash_reads(server_port))
    assert not result.ok
    assert GREETING not in str(result.output) and GREETING not in result.error
    assert "status 1" in result.error  # the connection failed, and bash says so


async def test_bash_reaches_it_when_the_tool_opts_in(server_port):
    async with BashTool(network=True) as bash:
        result = await bash.call(bash_reads(server_port))
    assert result.ok, result.error
    assert result.output["stdout"].strip() == GREETING


async def test_the_tree_options_reach_bash(server_port):
    # What a tree's `tool_options: {network: true}` / `{builtin: bash, options: ...}` build.
    opened = BuiltinToolProvider.build("bash", {"network": True})
    closed = ToolSet.resolve(["bash"]).get("bash")
    assert opened.network is True and closed.network is False
    assert (await opened.call(bash_reads(server_port))).ok
    assert not (await closed.call(bash_reads(server_port))).ok


TREE = """
version: 1
name: network_opt_in
tools:
  - {builtin: bash, options: {network: true}}
  - {builtin: python_repl, options: {limits: {network: true}}}
root:
  sequence:
    name: Main
    children:
      - condition: {name: Always, check: "True"}
"""


async def test_a_tree_file_opts_its_tools_in(server_port):
    from jianmu_bt.loader import load_tree

    opened = load_tree(TREE).toolset
    closed = load_tree(TREE.replace("network: true", "network: false")).toolset
    assert opened.get("bash").network and opened.get("python_repl").network
    assert not closed.get("bash").network and not closed.get("python_repl").network
    assert (await opened.call("bash", bash_reads(server_port))).ok
    assert GREETING in str((await opened.call("python_repl", python_reads(server_port))).output)
    assert not (await closed.call("bash", bash_reads(server_port))).ok
    assert not (await closed.call("python_repl", python_reads(server_port))).ok


async def test_python_repl_cannot_reach_a_local_server_by_default(server_port):
    result = await PythonREPLTool().call(python_reads(server_port))
    assert not result.ok
    assert GREETING not in str(result.output) and GREETING not in result.error
    assert "OSError" in result.error or "Network is unreachable" in result.error


async def test_python_repl_reaches_it_when_it_opts_in(server_port):
    opted = PythonREPLTool(network=True)
    assert opted.network and opted.sandbox_limits["network"] is True
    result = await opted.call(python_reads(server_port))
    assert result.ok, result.error
    assert GREETING in result.output["stdout"]
    assert PythonREPLTool(network=False, limits={"network": True}).network is False
    # `limits={"network": True}` is the opt-in a constructor without a `network` option accepts.
    result = await PythonREPLTool(limits={"network": True}).call(python_reads(server_port))
    assert result.ok, result.error
    assert GREETING in result.output["stdout"]
    repl = PythonREPLTool()
    repl.network = True
    assert GREETING in (await repl.call(python_reads(server_port))).output["stdout"]


async def test_a_runner_without_network_wins_over_the_tool(server_port):
    async with LocalSandbox(network=False) as sandbox:
        result = await BashTool(network=True, runner=sandbox).call(bash_reads(server_port))
    assert not result.ok and GREETING not in str(result.output)


async def test_an_online_local_runner_keeps_an_offline_tool_offline(server_port):
    async with LocalSandbox(network=True) as sandbox:
        result = await BashTool(runner=sandbox).call(bash_reads(server_port))
        opened = await BashTool(runner=sandbox, network=True).call(bash_reads(server_port))
    assert not result.ok and GREETING not in str(result.output)
    assert opened.ok and opened.output["stdout"].strip() == GREETING


def test_every_call_carries_the_tools_network_wish():
    assert BashTool().sandbox_limits["network"] is False
    assert PythonREPLTool().sandbox_limits["network"] is False
    assert BashTool(network=True).sandbox_limits == {"timeout": 35.0, "network": True}
    assert PythonREPLTool(timeout=3).sandbox_limits == {"timeout": 3, "network": False}
    assert PythonREPLTool(limits=SandboxLimits(memory_bytes="200MiB")).network is False


def test_the_sandbox_and_the_call_must_both_allow_the_network():
    base = SandboxLimits()
    assert base.network is None and base.allows_network(True) and not base.allows_network(False)
    assert not base.tightened({"network": False}).allows_network(True)
    assert base.tightened({"network": True}).allows_network(True)
    assert not base.tightened({"network": True}).allows_network(False)
    assert not SandboxLimits(network=False).tightened({"network": True}).allows_network(True)


@pytest.mark.parametrize(("tool_network", "online"), [(False, False), (True, True)])
async def test_an_online_docker_sandbox_starts_offline_containers_for_offline_tools(
    monkeypatch, tool_network, online
):
    sandbox = DockerSandbox(IMAGE, network=True)
    asked: list[bool] = []

    async def start(limits: SandboxLimits, *, warm: bool, online: bool) -> None:
        asked.append(online)
        raise SandboxUnavailableError("stopped here by the test")

    monkeypatch.setattr(sandbox, "_start_worker", start)
    await BashTool(network=tool_network).call({"command": "true"}, runner=sandbox)
    assert asked == [online]
    assert sandbox._create_kwargs(sandbox.limits, online)["network_mode"] == (
        "bridge" if online else "none"
    )
    await sandbox.aclose()


async def test_docker_containers_of_offline_tools_have_only_loopback(docker_ready):
    count = {"command": "ls /sys/class/net | wc -l"}
    async with DockerSandbox(IMAGE, SandboxLimits(timeout=20), network=True) as sandbox:
        offline = await BashTool(runner=sandbox).call(count)
        online = await BashTool(runner=sandbox, network=True).call(count)
    assert offline.ok and offline.output["stdout"].strip() == "1"  # lo only
    assert online.ok and int(online.output["stdout"]) > 1


async def test_a_local_sandbox_is_offline_unless_built_with_network_true(server_port):
    assert LocalSandbox().network is False
    async with LocalSandbox() as sandbox:  # a trusted tool, whose calls ask nothing of the network
        blocked = await tools.connect.call({"port": server_port}, runner=sandbox)
    assert not blocked.ok and "OSError" in blocked.error


def test_runners_built_by_name_are_offline_unless_asked():
    from jianmu_bt.sandbox import create_runner

    assert create_runner("local").network is False
    assert create_runner({"kind": "local", "network": True}).network is True
    assert create_runner("docker", image=IMAGE).network is False
    assert create_runner({"kind": "docker", "image": IMAGE, "network": True}).network is True

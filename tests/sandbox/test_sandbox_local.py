"""LocalSandbox specifics: isolation statement, network namespace, re-creating tools, faults."""

from __future__ import annotations

import pytest
import sandbox_test_tools as tools
from sandbox_helpers import ROOT, assert_nothing_left

from jianmu_bt.sandbox import LocalSandbox, SandboxLimits
from jianmu_bt.sandbox.toolspec import ToolNotPortableError, describe_tool
from jianmu_bt.tools import tool

pytestmark = pytest.mark.anyio


async def test_the_isolation_statement_says_what_holds():
    async with LocalSandbox(network=False) as sandbox:
        report = await sandbox.start()
        text = report.describe()
        assert "network: none" in text
        if ROOT:
            assert "nobody" in report.user and report.warnings == ()
        else:
            assert any("files:" in warning for warning in report.warnings)


async def test_network_false_cuts_the_call_off_from_the_host(server_port):
    async with LocalSandbox(network=True) as open_sandbox:
        reached = await tools.connect.call({"port": server_port}, runner=open_sandbox)
        assert reached.ok and "hello" in reached.output
    async with LocalSandbox(network=False) as closed_sandbox:
        blocked = await tools.connect.call({"port": server_port}, runner=closed_sandbox)
        assert not blocked.ok and "OSError" in blocked.error


async def test_a_class_tool_is_rebuilt_with_its_sandbox_kwargs():
    async with LocalSandbox() as sandbox:
        result = await tools.Greeter("bonjour").call({"who": "Ada"}, runner=sandbox)
        assert result.ok and result.output.startswith("bonjour, Ada from ")


async def test_a_tool_that_cannot_be_rebuilt_gets_a_clear_error():
    @tool
    def local_only() -> int:
        return 1

    with pytest.raises(ToolNotPortableError, match="defined inside a function"):
        describe_tool(local_only)
    async with LocalSandbox() as sandbox:
        inner = await local_only.call({}, runner=sandbox)
        assert not inner.ok and "module level" in inner.error
        needs = await tools.NeedsArgs("x").call({}, runner=sandbox)
        assert not needs.ok and "sandbox_kwargs()" in needs.error


async def test_arguments_are_validated_inside_the_sandbox():
    async with LocalSandbox() as sandbox:
        result = await tools.add.call({"a": "not a number", "b": 1}, runner=sandbox)
        assert not result.ok and "invalid arguments" in result.error


async def test_a_file_larger_than_the_limit_cannot_be_written():
    async with LocalSandbox(SandboxLimits(max_file_bytes="1MiB")) as sandbox:
        small = await tools.write_big_file.call({"size": 1000}, runner=sandbox)
        assert small.ok
        big = await tools.write_big_file.call({"size": 5_000_000}, runner=sandbox)
        assert not big.ok and "files limit exceeded" in big.error
        await assert_nothing_left(sandbox)


async def test_a_worker_that_cannot_start_is_reported():
    async with LocalSandbox(python="/nonexistent/python3") as sandbox:
        result = await tools.add.call({"a": 1, "b": 2}, runner=sandbox)
        assert not result.ok and "cannot start the worker" in result.error


async def test_aclose_kills_the_warm_worker_and_removes_the_temporary_workspace():
    sandbox = LocalSandbox(warm=True)
    await tools.add.call({"a": 1, "b": 2}, runner=sandbox)
    assert sandbox.worker_pid is not None
    workspace = sandbox.workspace
    await sandbox.aclose()
    assert sandbox.worker_pid is None
    import os

    assert not os.path.exists(workspace)
    await assert_nothing_left(sandbox)


async def test_a_tool_may_tighten_but_not_loosen_the_limits():
    limits = SandboxLimits(timeout=10)
    assert limits.tightened({"timeout": 3}).timeout == 3
    assert limits.tightened({"timeout": 99}).timeout == 10
    with pytest.raises(ValueError, match="unknown sandbox limit"):
        limits.tightened({"walltime": 3})

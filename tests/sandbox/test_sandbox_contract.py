"""What must hold in both sandboxes (LocalSandbox and DockerSandbox), each test run in both.

Every test ends by asserting that no process, cgroup or container of the sandbox is left.
"""

from __future__ import annotations

import os
import shutil
import uuid

import anyio
import pytest
import sandbox_test_tools as tools
from sandbox_helpers import ROOT, assert_nothing_left

from jianmu_bt.tools.builtin.bash import BashTool
from jianmu_bt.tools.builtin.python_repl import PythonREPLTool

pytestmark = pytest.mark.anyio


async def test_a_call_runs_in_a_child_and_returns_its_result(make_sandbox):
    sandbox = make_sandbox()
    result = await tools.add.call({"a": 2, "b": 3}, runner=sandbox)
    assert result.ok and result.output == 5
    where = await tools.identity.call({}, runner=sandbox)
    assert where.output["pid"] != os.getpid()
    assert where.output["uid"] != 0 or not ROOT
    await assert_nothing_left(sandbox)


async def test_an_infinite_loop_ends_at_the_timeout(make_sandbox):
    sandbox = make_sandbox(timeout=1.5, cpu_seconds=60)
    with anyio.fail_after(60):  # a hang guard: the loop itself would never end
        result = await tools.spin.call({}, runner=sandbox)
    assert not result.ok and "timeout limit exceeded" in result.error
    await assert_nothing_left(sandbox)


async def test_a_cpu_hog_ends_at_the_cpu_limit(make_sandbox):
    sandbox = make_sandbox(timeout=20, cpu_seconds=1)
    result = await tools.spin.call({}, runner=sandbox)
    assert not result.ok and "cpu limit exceeded" in result.error
    await assert_nothing_left(sandbox)


async def test_a_memory_bomb_ends_at_the_memory_limit(make_sandbox):
    sandbox = make_sandbox(memory_bytes="256MiB")
    result = await tools.memory_bomb.call({}, runner=sandbox)
    assert not result.ok and "memory limit exceeded" in result.error
    await assert_nothing_left(sandbox)


async def test_a_fork_bomb_ends_at_the_process_limit(make_sandbox):
    sandbox = make_sandbox(max_processes=16, timeout=15)
    result = await tools.fork_bomb.call({}, runner=sandbox)
    assert not result.ok and "processes limit exceeded" in result.error
    await assert_nothing_left(sandbox)


async def test_a_shell_fork_bomb_ends_at_the_process_limit(make_sandbox):
    sandbox = make_sandbox(max_processes=16)
    bash = BashTool(timeout=3)
    # The shell stays alive while the bomb grows, so the limit is reached however busy the
    # machine is (without the sleep the shell could exit before the bomb got going).
    result = await bash.call({"command": "bomb() { bomb | bomb & }; bomb; sleep 2"}, runner=sandbox)
    assert not result.ok and "processes limit exceeded" in result.error
    await assert_nothing_left(sandbox)


async def test_a_flood_of_output_is_capped(make_sandbox):
    sandbox = make_sandbox(max_output_bytes=100_000)
    result = await tools.flood.call({"size": 5_000_000}, runner=sandbox)
    assert not result.ok and "output limit exceeded" in result.error
    bash = await BashTool(max_output_bytes=1000).call(
        {"command": "yes | head -c 5000000"}, runner=sandbox
    )
    assert bash.ok and len(bash.output["stdout"]) < 1100
    assert "output truncated" in bash.output["stdout"]
    repl = PythonREPLTool(max_output_chars=1000)
    printed = await repl.call({"code": "for i in range(10**5): print('x' * 100)"}, runner=sandbox)
    assert printed.ok and "output truncated" in printed.output["stdout"]
    await assert_nothing_left(sandbox)


async def test_code_cannot_delete_or_write_files_outside_the_workspace(make_sandbox):
    if make_sandbox.kind == "local" and not ROOT:
        pytest.skip("LocalSandbox protects files outside its workspace only when run as root")
    victim_dir = f"/opt/jianmu-victim-{uuid.uuid4().hex[:8]}"
    os.makedirs(f"{victim_dir}/data")
    with open(f"{victim_dir}/data/keep.txt", "w") as handle:
        handle.write("precious")
    sandbox = make_sandbox()
    try:
        result = await tools.destroy.call({"path": f"{victim_dir}/data"}, runner=sandbox)
        shell = await BashTool().call(
            {"command": f"rm -rf {victim_dir}; rm -rf /usr/bin 2>&1; touch /etc/pwned"},
            runner=sandbox,
        )
        assert result.ok and not shell.ok  # the shell's writes were refused: a failed command
        if make_sandbox.kind == "local":
            assert result.output["seen"]  # visible, so the refusal below is the OS's doing
        with open(f"{victim_dir}/data/keep.txt") as handle:
            assert handle.read() == "precious"
        assert not os.path.exists(f"{victim_dir}/pwned")
        assert not os.path.exists("/etc/pwned")
        assert os.path.exists("/usr/bin/env")
    finally:
        shutil.rmtree(victim_dir)
    await assert_nothing_left(sandbox)


async def test_environment_secrets_are_not_visible(make_sandbox, monkeypatch):
    secret = f"hunter2-{uuid.uuid4().hex}"
    monkeypatch.setenv("JIANMU_TEST_SECRET", secret)
    sandbox = make_sandbox()
    found = await tools.find_text.call({"needle": secret}, runner=sandbox)
    assert found.ok
    assert found.output == []
    shell = await BashTool().call({"command": "env; cat /proc/*/environ"}, runner=sandbox)
    assert secret not in str(shell.output)
    await assert_nothing_left(sandbox)


async def test_processes_a_call_leaves_behind_are_killed(make_sandbox):
    sandbox = make_sandbox(warm=True)
    result = await tools.spawn_sleeper.call({}, runner=sandbox)
    assert result.ok
    shell = await BashTool().call({"command": "sleep 300 & echo started"}, runner=sandbox)
    assert shell.ok and "started" in shell.output["stdout"]
    await sandbox.aclose()
    await assert_nothing_left(sandbox)


async def test_cancelling_the_caller_kills_the_work(make_sandbox):
    sandbox = make_sandbox(timeout=60)
    returned = []
    with anyio.move_on_after(1.0) as scope:
        returned.append(await tools.sleep_forever.call({}, runner=sandbox))
    assert scope.cancelled_caught and not returned  # interrupted, not run to the 60 s limit
    await assert_nothing_left(sandbox)  # the worker sleeping in the call was killed


async def test_a_warm_worker_serves_many_calls_and_is_replaced_after_a_limit(make_sandbox):
    sandbox = make_sandbox(warm=True, timeout=2, cpu_seconds=60)
    first = await tools.identity.call({}, runner=sandbox)
    second = await tools.identity.call({}, runner=sandbox)
    assert first.output["pid"] == second.output["pid"]
    stopped = await tools.spin.call({}, runner=sandbox)
    assert "timeout limit exceeded" in stopped.error
    third = await tools.add.call({"a": 1, "b": 1}, runner=sandbox)
    assert third.ok and third.output == 2
    await sandbox.aclose()
    await assert_nothing_left(sandbox)

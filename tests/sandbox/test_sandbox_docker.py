"""DockerSandbox specifics: clear errors without an engine or image, and the container's shape."""

from __future__ import annotations

import pytest
import sandbox_test_tools as tools
from sandbox_helpers import IMAGE, assert_nothing_left

from jianmu_bt.sandbox import DockerSandbox, SandboxLimits, SandboxUnavailableError
from jianmu_bt.tools.builtin.bash import BashTool

pytestmark = pytest.mark.anyio


async def test_no_reachable_engine_is_a_clear_error(tmp_path):
    sandbox = DockerSandbox(IMAGE, docker_host=f"unix://{tmp_path}/no-such.sock")
    result = await tools.add.call({"a": 1, "b": 2}, runner=sandbox)
    assert not result.ok
    assert "no Docker engine is reachable at unix://" in result.error
    with pytest.raises(SandboxUnavailableError, match="no Docker engine"):
        await sandbox.check()
    await sandbox.aclose()


async def test_a_missing_image_is_a_clear_error(docker_ready):
    async with DockerSandbox("jianmu-no-such-image:never") as sandbox:
        result = await tools.add.call({"a": 1, "b": 2}, runner=sandbox)
        assert not result.ok and "never pulls" in result.error
        await assert_nothing_left(sandbox)


async def test_the_container_is_read_only_unprivileged_and_offline(docker_ready):
    async with DockerSandbox(IMAGE, SandboxLimits(timeout=20)) as sandbox:
        command = (
            "id -u; touch /usr/x 2>&1; touch /workspace/ok && echo wrote; "
            "cat /proc/self/status | grep CapEff; ip -o link 2>/dev/null | wc -l"
        )
        result = await BashTool().call({"command": command}, runner=sandbox)
        out = result.output["stdout"]
        lines = out.splitlines()
        assert lines[0] == "65534"
        assert "Read-only file system" in out and "wrote" in out
        assert "CapEff:\t0000000000000000" in out
        assert lines[-1] == "1"  # only the loopback interface: network_mode none
        await assert_nothing_left(sandbox)


async def test_a_warm_container_keeps_the_session_of_python_repl(docker_ready):
    from jianmu_bt.tools.builtin.python_repl import PythonREPLTool

    async with DockerSandbox(IMAGE, warm=True) as sandbox:
        repl = PythonREPLTool(session=True, runner=sandbox)
        await repl.call({"code": "n = 20"})
        result = await repl.call({"code": "n + 22"})
        assert result.ok and result.output["value"] == "42"
    await assert_nothing_left(sandbox)

"""bash: exit code, timeout, output caps, command lists, and that it never runs in-process."""

from __future__ import annotations

import pytest

from jianmu_bt.sandbox import InProcessRunner, LocalSandbox
from jianmu_bt.tools.builtin.bash import BashTool, CommandPolicy, command_names

pytestmark = pytest.mark.anyio


async def test_it_returns_output_and_the_exit_code():
    result = await BashTool().call({"command": "echo out; echo err >&2; exit 3"})
    assert not result.ok and "status 3" in result.error
    assert result.output == {"exit_code": 3, "stdout": "out\n", "stderr": "err\n"}
    assert (await BashTool().call({"command": "echo fine"})).ok


async def test_a_command_ends_at_the_timeout_with_its_partial_output():
    result = await BashTool(timeout=1).call({"command": "echo started; sleep 30"})
    assert not result.ok
    assert "timeout limit exceeded" in result.error and "started" in result.error


async def test_the_caller_may_shorten_but_not_extend_the_timeout():
    tool = BashTool(timeout=1)
    result = await tool.call({"command": "sleep 5; echo done", "timeout": 100})
    assert not result.ok and "longer than 1 s" in result.error


async def test_output_is_capped():
    result = await BashTool(max_output_bytes=100).call({"command": "seq 1 100000"})
    assert result.ok and result.output["stdout"].endswith("more bytes]")


async def test_background_jobs_do_not_keep_the_call_open():
    result = await BashTool(timeout=20).call({"command": "sleep 100 & echo quick"})
    assert result.ok and result.output["stdout"] == "quick\n"


async def test_files_persist_in_the_workspace_between_calls(tmp_path):
    async with LocalSandbox(workspace=tmp_path) as sandbox:
        bash = BashTool(runner=sandbox)
        await bash.call({"command": "echo kept > note.txt"})
        result = await bash.call({"command": "cat note.txt; pwd"})
    assert result.output["stdout"] == f"kept\n{tmp_path}\n"


async def test_the_deny_list_refuses_before_anything_runs(tmp_path):
    bash = BashTool(deny=["rm"], workspace=tmp_path)
    (tmp_path / "keep").write_text("x")
    result = await bash.call({"command": "ls && /bin/rm -f keep"})
    assert not result.ok and "'rm' is on the deny-list" in result.error
    assert (tmp_path / "keep").exists()


async def test_the_allow_list_admits_only_listed_commands():
    bash = BashTool(allow=["echo", "cat"])
    assert (await bash.call({"command": "echo hi | cat"})).ok
    refused = await bash.call({"command": "echo hi; curl example.com"})
    assert not refused.ok and "'curl' is not allowed" in refused.error
    hidden = await bash.call({"command": "echo $(rm -rf /)"})
    assert not hidden.ok and "hides which commands run" in hidden.error


def test_command_names_sees_through_pipes_lists_wrappers_and_assignments():
    line = "A=1 env B=2 sudo rm -rf x | grep y && (cd /; ls) ; if true; then /usr/bin/wc; fi"
    assert command_names(line) == ["env", "sudo", "rm", "grep", "cd", "ls", "true", "wc"]
    assert CommandPolicy(deny=["rm"]).check("echo rm") is None  # an argument, not a command
    assert CommandPolicy(deny=["rm"]).check("eval rm") is not None


async def test_it_refuses_to_run_in_process():
    refused = await BashTool().call({"command": "true"}, runner=InProcessRunner())
    assert not refused.ok and "never runs commands in-process" in refused.error
    assert BashTool().spec()["effects"] == ["exec"] and BashTool.parallel_safe is False

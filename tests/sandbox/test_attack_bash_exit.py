"""Attack class 12: `bash` must not report `ok` for a command that failed.

A non-zero exit status (1, 2, 127 command not found, 130 after SIGINT) or a killing signal is a
failed result whose error names the status and quotes the ends of stderr and stdout, so an LLM
that reads only the error can act on it; the output dict is kept. Success stays `ok`.
"""

from __future__ import annotations

import pytest

from jianmu_bt.sandbox import LocalSandbox
from jianmu_bt.tools.builtin.bash import BashTool, exit_error
from jianmu_bt.tools.registry import BuiltinToolProvider

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("command", "status", "meaning"),
    [
        ("echo partial; echo 'grep: no match' >&2; exit 1", 1, None),
        ("echo partial; echo 'usage: frob [-x]' >&2; exit 2", 2, None),
        ("echo partial; jianmu-no-such-command-xyz", 127, "command not found"),
        ("echo partial; echo interrupted >&2; exit 130", 130, "SIGINT"),
        ("echo partial; echo denied >&2; exit 126", 126, "not executable"),
        ("echo partial; echo wrapped >&2; exit 255", 255, None),
    ],
)
async def test_a_non_zero_exit_status_is_an_error_with_status_and_output(
    make_sandbox, command, status, meaning
):
    sandbox = make_sandbox()
    result = await BashTool().call({"command": command}, runner=sandbox)
    assert not result.ok
    assert result.error.startswith(f"Error: command exited with status {status}")
    if meaning:
        assert meaning in result.error.splitlines()[0]
    assert "partial" in result.error  # the stdout tail
    assert result.output["exit_code"] == status
    assert result.output["stdout"] == "partial\n"
    assert result.content.startswith("Error: command exited with status")  # what the LLM reads


@pytest.mark.parametrize(("command", "name"), [("kill -9 $$", "SIGKILL"), ("kill $$", "SIGTERM")])
async def test_a_shell_killed_by_a_signal_is_an_error_naming_the_signal(
    make_sandbox, command, name
):
    sandbox = make_sandbox()
    result = await BashTool().call({"command": f"echo before; {command}"}, runner=sandbox)
    assert not result.ok
    assert result.error.startswith("Error: command was killed by signal")
    assert name in result.error and "before" in result.error
    assert result.output["exit_code"] < 0


async def test_a_child_killed_by_a_signal_reports_128_plus_n():
    # The child kills itself in the foreground (a background `sleep & kill -INT $!` races with
    # the shell setting SIGINT to ignored in background jobs); `exit $?` keeps bash from exec-ing
    # the child in its own place, so bash sees the child die and reports 128 + 2.
    command = "sh -c 'kill -INT $$'; exit $?"
    result = await BashTool().call({"command": command})
    assert not result.ok
    assert "status 130" in result.error and "SIGINT" in result.error


async def test_a_successful_command_stays_ok(make_sandbox):
    sandbox = make_sandbox()
    result = await BashTool().call({"command": "echo out; echo warn >&2"}, runner=sandbox)
    assert result.ok and result.error is None
    assert result.output == {"exit_code": 0, "stdout": "out\n", "stderr": "warn\n"}


async def test_the_last_command_of_a_pipeline_or_list_decides():
    assert not (await BashTool().call({"command": "true | false"})).ok
    assert (await BashTool().call({"command": "false || true"})).ok
    assert not (await BashTool().call({"command": "true && false"})).ok


async def test_ok_exit_codes_loosen_the_check_for_commands_that_use_status_1():
    grep = BashTool(ok_exit_codes=[0, 1])
    result = await grep.call({"command": "echo abc | grep zzz"})
    assert result.ok and result.output["exit_code"] == 1
    still = await grep.call({"command": "exit 2"})
    assert not still.ok and "status 2" in still.error
    built = BuiltinToolProvider.build("bash", {"ok_exit_codes": [0, 1]})
    assert built.ok_exit_codes == (0, 1)


async def test_the_error_quotes_only_the_tail_of_long_output():
    result = await BashTool().call({"command": "seq 1 5000; echo oops >&2; exit 3"})
    assert not result.ok
    assert "\n5000" in result.error and "\n1\n" not in result.error
    assert "stdout (last 2000 characters)" in result.error
    assert len(result.error) < 5000


def test_the_error_text_reads_well_without_output():
    assert exit_error(2, "", "") == "Error: command exited with status 2\n(no output)"
    assert exit_error(-15, "", "bye\n").startswith("Error: command was killed by signal SIGTERM")
    assert "command not found" in exit_error(127, "", "x: not found")


async def test_the_timeout_stays_a_timeout_error():
    result = await BashTool(timeout=1).call({"command": "echo started; sleep 30"})
    assert not result.ok and "timeout limit exceeded" in result.error


async def test_a_finished_command_is_never_reported_as_killed():
    # Both pipes end a moment before the shell exits; killing the group then would turn a
    # successful command into "killed by signal SIGKILL".
    async with LocalSandbox(warm=True, network=False) as sandbox:
        bash = BashTool(max_output_bytes=100, runner=sandbox)
        for _ in range(25):
            result = await bash.call({"command": "seq 1 100000"})
            assert result.ok, result.error
            assert result.output["exit_code"] == 0


async def test_a_shell_that_closes_its_output_still_ends_at_the_timeout():
    result = await BashTool(timeout=1).call({"command": "exec >&- 2>&-; sleep 30"})
    assert not result.ok and "timeout limit exceeded" in result.error

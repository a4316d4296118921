"""python_repl: output, last value, errors, sessions, and that it never runs in-process."""

from __future__ import annotations

import pytest
from sandbox_helpers import assert_nothing_left

from jianmu_bt.sandbox import InProcessRunner, LocalSandbox, SandboxLimits
from jianmu_bt.tools import ToolSet
from jianmu_bt.tools.builtin.python_repl import PythonREPLTool

pytestmark = pytest.mark.anyio


async def test_it_returns_stdout_stderr_and_the_last_value():
    repl = PythonREPLTool()
    code = "import sys\nprint('out')\nprint('err', file=sys.stderr)\n6 * 7"
    result = await repl.call({"code": code})
    assert result.ok
    assert result.output == {"stdout": "out\n", "stderr": "err\n", "value": "42"}


async def test_an_exception_is_an_error_with_the_code_traceback():
    result = await PythonREPLTool().call({"code": "print('before')\nx = 1\nx / 0"})
    assert not result.ok
    assert "ZeroDivisionError: division by zero" in result.error
    assert 'File "<python_repl:1>", line 3' in result.error and "before" in result.error
    assert "jianmu_bt" not in result.error  # the sandbox's own frames are not shown


async def test_a_syntax_error_is_reported():
    result = await PythonREPLTool().call({"code": "def broken(:"})
    assert not result.ok and "SyntaxError" in result.error


async def test_an_endless_loop_ends_at_the_tools_timeout():
    result = await PythonREPLTool(timeout=1).call({"code": "while True: pass"})
    assert not result.ok and "timeout limit exceeded" in result.error


async def test_it_refuses_to_run_in_process():
    repl = PythonREPLTool()
    refused = await repl.call({"code": "1"}, runner=InProcessRunner())
    assert not refused.ok and "never runs code in-process" in refused.error
    direct = await repl.execute_local({"code": "1"})
    assert direct.startswith("Error: python_repl runs code only inside a sandbox")


async def test_a_session_keeps_variables_between_calls():
    async with PythonREPLTool(session=True) as repl:
        await repl.call({"code": "total = 40"})
        result = await repl.call({"code": "total + 2"})
        assert result.output["value"] == "42"
    other = PythonREPLTool()
    missing = await other.call({"code": "total"})
    assert not missing.ok and "NameError" in missing.error


async def test_a_session_is_restarted_after_a_limit_and_says_so():
    async with PythonREPLTool(session=True, timeout=1) as repl:
        await repl.call({"code": "kept = 1"})
        stopped = await repl.call({"code": "while True: pass"})
        assert "timeout limit exceeded" in stopped.error and "restarted" in stopped.error
        after = await repl.call({"code": "'kept' in globals()"})
        assert after.ok and after.output["value"] == "False"
        sandbox = repl._owned
    await assert_nothing_left(sandbox)


async def test_a_memory_bomb_in_the_code_hits_the_memory_limit():
    repl = PythonREPLTool(limits=SandboxLimits(memory_bytes="200MiB"))
    result = await repl.call({"code": "x = bytearray(2 * 1024**3)"})
    assert not result.ok and "memory limit exceeded" in result.error


async def test_it_is_resolved_by_name_and_runs_in_a_given_sandbox(tmp_path):
    tools = ToolSet.resolve(["python"])
    repl = tools.get("python_repl")
    assert repl.spec()["effects"] == ["exec"] and repl.parallel_safe is False
    async with LocalSandbox(workspace=tmp_path / "ws") as sandbox:
        result = await tools.execute(
            "python_repl", {"code": "open('note.txt', 'w').write('hi')"}, runner=sandbox
        )
    assert result == {"ok": True, "output": {"stdout": "", "stderr": "", "value": "2"}}
    assert (tmp_path / "ws" / "note.txt").read_text() == "hi"

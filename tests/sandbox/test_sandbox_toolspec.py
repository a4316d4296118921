"""How tools cross into a sandbox (by import path, never pickle), and runners by name."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import sandbox_test_tools as tools

from jianmu_bt.sandbox import InProcessRunner, LocalSandbox, create_runner
from jianmu_bt.sandbox.toolspec import describe_tool, recreate_tool
from jianmu_bt.tools import FunctionTool


def test_a_function_tool_is_described_by_its_import_path():
    spec = describe_tool(tools.add)
    assert spec == {
        "name": "add",
        "module": "sandbox_test_tools",
        "qualname": "add",
        "kind": "function",
    }
    assert recreate_tool(spec) is tools.add


def test_a_function_wrapped_later_carries_its_options():
    wrapped = FunctionTool(tools.identity.fn, name="who")
    spec = describe_tool(wrapped)
    assert spec["options"]["name"] == "who"
    assert recreate_tool(spec).name == "who"


def test_a_class_tool_is_described_with_its_constructor_arguments():
    spec = describe_tool(tools.Greeter("hi"))
    assert spec["kind"] == "class" and spec["kwargs"] == {"greeting": "hi"}
    assert recreate_tool(spec).greeting == "hi"


def test_a_tool_defined_in_the_main_script_runs_in_a_sandbox(tmp_path):
    script = tmp_path / "agent_script.py"
    script.write_text(
        textwrap.dedent(
            """
            import anyio
            from jianmu_bt.sandbox import LocalSandbox
            from jianmu_bt.tools import tool

            @tool
            def square(x: int) -> int:
                return x * x

            async def main():
                async with LocalSandbox() as sandbox:
                    result = await square.call({"x": 7}, runner=sandbox)
                    print(result.output if result.ok else result.error)

            if __name__ == "__main__":
                anyio.run(main)
            """
        )
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "49", done.stdout + done.stderr


def test_runners_are_created_by_name():
    assert isinstance(create_runner("inprocess"), InProcessRunner)
    local = create_runner({"kind": "local", "warm": True})
    assert isinstance(local, LocalSandbox) and local.warm
    docker = create_runner("docker", image="busybox")
    assert type(docker).__name__ == "DockerSandbox" and docker.image == "busybox"
    with pytest.raises(ValueError, match="unknown runner 'podman'"):
        create_runner("podman")

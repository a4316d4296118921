"""Resources a Ray cluster does not have: named at once, never a silent hang.

A RayRunner asking for a GPU on a Ray without one fails each call with the resource named; a
`--ray` batch whose tree has such a tool refuses to start, naming the tool and the resource.
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Iterator

import anyio
import pytest
from batch_helpers import import_ray, write_inputs

from jianmu_bt.sandbox.ray_resources import missing_resources
from jianmu_bt.tools import tool


def test_missing_resources_names_what_the_cluster_lacks():
    cluster = {"CPU": 2.0, "memory": 8 * 2**30}
    assert missing_resources(cluster, {"num_cpus": 1, "num_gpus": 0}) == ""
    assert missing_resources(cluster, {"num_gpus": 1}) == "num_gpus=1 (the Ray cluster has GPU 0)"
    assert missing_resources(cluster, {"num_cpus": 4}) == "num_cpus=4 (the Ray cluster has CPU 2)"
    assert "memory=16 GiB (the Ray cluster has memory 8 GiB)" in missing_resources(
        cluster, {"memory": 16 * 2**30}
    )


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    import_ray()
    from jianmu_bt.sandbox.ray_local import start_local_ray

    os.environ.pop("RAY_ADDRESS", None)
    stop = start_local_ray(2)
    try:
        yield
    finally:
        stop()


@tool
def plain(x: int) -> int:
    """Give x + 1."""
    return x + 1


def test_a_ray_runner_asking_for_a_gpu_the_cluster_lacks_fails_naming_it(local_ray):
    from jianmu_bt.sandbox import RayRunner

    runner = RayRunner(num_gpus=1)

    async def call():
        with anyio.fail_after(120):  # before: the task waited for a GPU forever
            return await plain.call({"x": 1}, runner=runner)

    result = anyio.run(call)
    assert not result.ok
    assert "num_gpus=1 (the Ray cluster has GPU 0)" in result.error


GPU_TREE = """
version: 1
name: wants_gpu
state:
  x: {type: integer, input: true}
  y: {type: integer}
tools:
  - {python: "MODULE:plain", runner: {kind: ray, num_gpus: 1}}
root:
  sequence:
    name: Main
    children:
      - tool: {name: OnGpu, tool: plain, arguments: {x: "{x}"}, output: y}
"""


def test_a_ray_batch_whose_tool_asks_for_a_missing_gpu_refuses_to_start(local_ray, tmp_path):
    from jianmu_bt.batch import BatchError, run_batch

    module = f"gputool_{os.getpid()}_{time.monotonic_ns()}"
    (tmp_path / f"{module}.py").write_text(
        "from jianmu_bt.tools import tool\n\n\n@tool\ndef plain(x: int) -> int:\n"
        '    """Give x + 1."""\n    return x + 1\n'
    )
    tree = tmp_path / "tree.yaml"
    tree.write_text(GPU_TREE.replace("MODULE", module))
    inputs = write_inputs(tmp_path, [{"x": 1}, {"x": 2}])
    with pytest.raises(BatchError) as caught:
        run_batch(tree, inputs, out=io.StringIO(), ray="local", store=tmp_path / "runs.db")
    assert "tool 'plain' asks for num_gpus=1 (the Ray cluster has GPU 0)" in str(caught.value)

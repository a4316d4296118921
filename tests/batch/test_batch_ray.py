"""Batches on Ray and RayRunner, against a real local Ray started once for this module.

The module's fixture starts Ray (2 CPUs, usage stats off, no dashboard, a short temporary
folder) and shuts it down at the end; it then checks that no process of that Ray is left.
A worker is killed with SIGKILL during a batch: its run is resumed by another worker.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from batch_helpers import batch, calls, import_ray, results, wait_for, write_inputs, write_tree

ray = import_ray()  # skipped without Ray, failed with JIANMU_REQUIRE_RAY=1

from jianmu_bt.loader import TreeLoadError, load_tree  # noqa: E402
from jianmu_bt.sandbox import RayRunner  # noqa: E402
from jianmu_bt.store import PostgresStore  # noqa: E402
from jianmu_bt.tools import tool  # noqa: E402


def _ray_processes(temp_dir: str) -> set[int]:
    """Live processes whose command line names this Ray's folder (raylet, GCS, workers...)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if temp_dir.encode() in cmdline and state != "Z":
                found.add(int(entry.name))
    return found


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    temp_dir = tempfile.mkdtemp(prefix="jrt", dir="/tmp")
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp_dir, log_to_driver=False)
    try:
        assert _ray_processes(temp_dir)  # the check below can see Ray's processes
        yield
    finally:
        ray.shutdown()
        try:
            wait_for(lambda: not _ray_processes(temp_dir), timeout=30)
        finally:
            shutil.rmtree(temp_dir, ignore_errors=True)


def test_a_batch_on_ray_reports_each_line_once(local_ray, tmp_path):
    tree = write_tree(tmp_path)
    inputs = write_inputs(tmp_path, [{"x": 1}, "[1, 2]", {"x": -1}, {"x": 150}, {"x": 2}])
    out = tmp_path / "results.jsonl"
    code, err = batch(tree, inputs, "--ray", "--out", out, "--store", tmp_path / "runs.db")
    assert code == 1, err
    found = results(out)
    assert {line: r["status"] for line, r in found.items()} == {
        1: "succeeded", 2: "invalid", 3: "failed", 4: "paused", 5: "succeeded"
    }  # fmt: skip
    assert "got an array" in found[2]["error"]
    assert found[5]["state"]["z"] == 4
    assert calls(tmp_path) == {1: 1, -1: 1, 150: 1, 2: 1}
    assert ray.is_initialized()  # a Ray the batch did not start is left running


def test_a_tool_module_missing_on_ray_workers_fails_each_run_without_a_hang(local_ray, tmp_path):
    tree = write_tree(tmp_path, parent_only=True)
    inputs = write_inputs(tmp_path, [{"x": 1}, {"x": 2}])
    out = tmp_path / "results.jsonl"
    code, _ = batch(tree, inputs, "--ray", "--out", out, "--store", tmp_path / "runs.db")
    assert code == 1
    found = results(out)
    assert [r["status"] for r in found.values()] == ["error", "error"]
    assert all("imports only in the test process" in r["error"] for r in found.values())


def test_a_killed_ray_worker_run_is_resumed_elsewhere_recorded_in_postgres(
    local_ray, tmp_path, postgres_server
):
    from postgres_server import create_database, drop_database

    dsn = create_database(postgres_server)
    try:
        tree = write_tree(tmp_path)
        inputs = write_inputs(tmp_path, [{"x": 1}, {"x": 1000}, {"x": 2}, {"x": 3}, {"x": 4}])
        out = tmp_path / "results.jsonl"
        outcome: dict[str, object] = {}

        def run() -> None:
            outcome["code"], outcome["err"] = batch(
                tree, inputs, "--ray", "--out", out, "--store", dsn, "--batch-id", "k"
            )

        thread = threading.Thread(target=run)
        thread.start()
        marker = wait_for(lambda: list(tmp_path.glob("stall-1000-*")))[0]
        killed = int(marker.name.rsplit("-", 1)[1])
        os.kill(killed, signal.SIGKILL)
        thread.join(180)
        assert not thread.is_alive()
        assert outcome["code"] == 0, outcome["err"]
        found = results(out)
        assert [found[line]["status"] for line in sorted(found)] == ["succeeded"] * 5
        assert found[2]["state"]["z"] == 2000
        # every input finished exactly once; Count ran before the kill and not again
        assert calls(tmp_path) == {1: 1, 1000: 1, 2: 1, 3: 1, 4: 1}
        with PostgresStore(dsn, create=False) as store:
            runs = {run.run_id: run.status for run in store.runs()}
            assert runs == dict.fromkeys(["k-1", "k-2", "k-3", "k-4", "k-5"], "succeeded")
            log = [(row.tool, row.status) for row in store.journal_log("k-2")]
        # the killed run: count done once; stall (read-only: no `running` row) killed in flight,
        # run again, done once
        assert log.count(("count", "done")) == 1
        assert log.count(("stall", "running")) == 0 and log.count(("stall", "done")) == 1
    finally:
        drop_database(postgres_server, dsn)


# -- RayRunner ----------------------------------------------------------------------------------


@tool
def where(x: int) -> dict:
    """Which process ran the call."""
    return {"pid": os.getpid(), "x": x}


@tool
def broken(x: int) -> int:
    """Always fails."""
    raise RuntimeError(f"broken on {x}")


@tool
def sleepy(seconds: float, pid_file: str = "") -> str:
    """Sleep, writing this process's pid to `pid_file` first (each test its own: a Ray task
    retried after its worker was killed may still write it long after its test). The pid is
    written to a side file and renamed into place, so a test that sees the file sees the pid."""
    if pid_file:
        partial = Path(f"{pid_file}.{os.getpid()}.part")
        partial.write_text(str(os.getpid()))
        partial.replace(pid_file)
    time.sleep(seconds)
    return "woke"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_ray_runner_runs_calls_as_ray_tasks_and_returns_tool_results(local_ray):
    runner = RayRunner(num_cpus=1, memory="64MiB", timeout=60)

    async def main() -> list:
        return [
            await where.call({"x": 3}, runner=runner),
            await broken.call({"x": 1}, runner=runner),
            await where.call({"x": "not a number"}, runner=runner),
        ]

    @tool
    def inner(x: int) -> int:
        """Defined in a function: no import path a worker could use."""
        return x

    async def not_portable() -> object:
        return await inner.call({"x": 1}, runner=runner)

    ok, failed, invalid = anyio.run(main)
    local = anyio.run(not_portable)
    assert not local.ok and "defined inside a function" in local.error
    assert ok.ok and ok.output["x"] == 3 and ok.output["pid"] != os.getpid()
    assert not failed.ok and "RuntimeError: broken on 1" in failed.error
    assert not invalid.ok and "x" in invalid.error  # validated on the worker, as locally
    runner.close()  # connected to the module's Ray: leaves it running
    assert ray.is_initialized()


def test_ray_runner_timeout_and_cancellation_cancel_the_ray_task(local_ray, tmp_path):
    pid_file = tmp_path / "sleepy.pid"
    runner = RayRunner(timeout=2)

    async def timed_out() -> object:
        return await sleepy.call({"seconds": 30, "pid_file": str(pid_file)}, runner=runner)

    result = anyio.run(timed_out)
    assert not result.ok and "timeout limit exceeded" in result.error
    worker = int(pid_file.read_text())
    wait_for(lambda: not _alive(worker), timeout=30)  # ray.cancel(force=True) ended the worker

    pid_file = tmp_path / "cancelled.pid"  # its own: nothing of the first call can write it

    async def cancelled() -> None:
        with anyio.move_on_after(20):
            async with anyio.create_task_group() as group:
                call = functools.partial(
                    sleepy.call, {"seconds": 30, "pid_file": str(pid_file)}, runner=RayRunner()
                )
                group.start_soon(call)
                await anyio.to_thread.run_sync(lambda: wait_for(pid_file.exists, 60))
                group.cancel_scope.cancel()

    anyio.run(cancelled)
    worker = int(pid_file.read_text())
    wait_for(lambda: not _alive(worker), timeout=30)


def test_a_tree_sends_a_tool_to_ray_with_runner_ray_in_yaml(local_ray, tmp_path):
    (tmp_path / "raytools_yaml.py").write_text(
        "import os\nfrom jianmu_bt.tools import tool\n\n"
        "@tool\ndef pid_of(x: int) -> int:\n    '''The pid.'''\n    return os.getpid()\n"
    )
    source = """
version: 1
name: onray
state:
  pid: {type: integer}
tools:
  - {python: "raytools_yaml:pid_of", runner: {kind: ray, num_cpus: 1, memory: 64MiB}}
root:
  sequence:
    name: Main
    children:
      - tool: {name: Where, tool: pid_of, arguments: {x: 1}, output: pid}
"""
    (tmp_path / "tree.yaml").write_text(source)
    with load_tree(tmp_path / "tree.yaml") as tree:
        result = tree.run()
    assert result.ok, result.reason
    assert result.state["pid"] != os.getpid()

    (tmp_path / "bad.yaml").write_text(source.replace("num_cpus: 1", "cpus: 1"))
    with pytest.raises(TreeLoadError) as caught:
        load_tree(tmp_path / "bad.yaml")
    assert "runner ray: unknown option(s) cpus" in str(caught.value.diagnostics[0])
    assert caught.value.diagnostics[0].line == 7


def test_a_warm_ray_runner_reuses_its_actors_and_replaces_one_that_timed_out(local_ray, tmp_path):
    pid_file = tmp_path / "sleepy.pid"
    runner = RayRunner(warm=1, num_cpus=0.5, timeout=60)  # the first call starts the actor

    async def main() -> tuple[list, object, object]:
        first = [await where.call({"x": i}, runner=runner) for i in range(3)]
        runner.timeout = 2  # the actor is up: now bound the slow call
        slow = await sleepy.call({"seconds": 30, "pid_file": str(pid_file)}, runner=runner)
        runner.timeout = 60  # the next call starts a new actor: not bound by the slow call's 2 s
        after = await where.call({"x": 9}, runner=runner)
        return first, slow, after

    try:
        first, slow, after = anyio.run(main)
    finally:
        runner.close()
    assert all(result.ok for result in first), first
    pids = {result.output["pid"] for result in first}
    assert len(pids) == 1  # one warm actor served all
    assert not slow.ok and "timeout limit exceeded" in slow.error
    killed = int(pid_file.read_text())
    assert killed in pids
    wait_for(lambda: not _alive(killed), timeout=30)  # the actor was killed at the timeout
    assert after.ok and after.output["pid"] not in pids  # a new actor took its place


# -- the fixes: capacity, tools on Ray inside a Ray batch, RAY_ADDRESS --------------------------


def test_a_ray_batch_without_workers_is_as_wide_as_the_ray_it_uses(local_ray, monkeypatch):
    from jianmu_bt.batch.backends import RayBackend
    from jianmu_bt.batch.worker import WorkerSpec

    monkeypatch.setattr(os, "cpu_count", lambda: 1)  # the driver's machine is not the measure
    spec = WorkerSpec("tree.yaml", "digest", "store")
    assert RayBackend(spec).capacity == 2  # the module's Ray has 2 CPUs
    assert RayBackend(spec, 5).capacity == 5  # --workers says otherwise


RAY_TOOL = """
import os, pathlib
from jianmu_bt.tools import tool


@tool
def on_ray(x: int) -> int:
    '''Runs as its own Ray task; logs the call.'''
    with open(pathlib.Path({folder!r}) / "ray-calls.log", "a") as log:
        log.write(f"{{x}} {{os.getpid()}}\\n")
    return x * 10
"""

RAY_TOOL_TREE = """
version: 1
name: nested
state:
  x: {type: integer, input: true}
  y: {type: integer}
tools:
  - {python: "MODULE:on_ray", runner: {kind: ray, num_cpus: 1}}
root:
  sequence:
    name: Main
    children:
      - tool: {name: OnRay, tool: on_ray, arguments: {x: "{x}"}, output: y}
"""


def test_runner_ray_tools_in_a_ray_batch_that_fills_every_cpu_do_not_deadlock(local_ray, tmp_path):
    """Every CPU of the 2-CPU Ray holds a run task; each run's tool call needs a CPU of its own
    (num_cpus: 1). The run task lends its CPU while it waits for the call, so all finish."""
    module = f"raytool_{os.getpid()}_{time.monotonic_ns()}"
    (tmp_path / f"{module}.py").write_text(RAY_TOOL.format(folder=str(tmp_path)))
    tree = tmp_path / "tree.yaml"
    tree.write_text(RAY_TOOL_TREE.replace("MODULE", module))
    inputs = write_inputs(tmp_path, [{"x": i} for i in range(1, 6)])
    out = tmp_path / "results.jsonl"
    code, err = batch(
        tree, inputs, "--ray", "--out", out, "--store", tmp_path / "runs.db", "--timeout", 90
    )  # a deadlock would end in each run's timeout, not hang the test
    assert code == 0, err
    found = results(out)
    assert {line: r["state"]["y"] for line, r in found.items()} == {i: 10 * i for i in range(1, 6)}
    log = (tmp_path / "ray-calls.log").read_text().split("\n")
    assert sorted(int(row.split()[0]) for row in log if row) == [1, 2, 3, 4, 5]


def test_start_local_ray_with_ray_address_set_connects_there_and_says_so(local_ray):
    address = ray.get_runtime_context().gcs_address
    script = (
        "import ray\n"
        "from jianmu_bt.sandbox.ray_runner import start_local_ray\n"
        "stop = start_local_ray(7)\n"
        "print(int(ray.cluster_resources()['CPU']))\n"
        "stop()\n"
    )
    env = {**os.environ, "RAY_ADDRESS": address}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "2"  # the running Ray's CPUs, not a new Ray's 7
    assert f"RAY_ADDRESS is set: connecting to the Ray at {address}" in done.stderr
    assert ray.cluster_resources()["CPU"] == 2  # disconnecting left the cluster running


def test_calls_waited_for_by_the_main_thread_give_results_errors_and_timeouts(local_ray):
    """The path a batch's Ray task takes (`run_with_released_cpus`): the calls' refs are waited
    for by this (main) thread while the async code runs in another."""
    from jianmu_bt.sandbox.ray_waits import active_waits, run_with_released_cpus

    # No timeout on the calls that must finish: a worker's cold start on a busy machine takes
    # seconds. The timed-out call's task is cancelled and its result comes after the run's loop
    # closed: it is dropped (it raised "Event loop is closed" in the main thread before).
    runner, bounded = RayRunner(), RayRunner(timeout=2)
    seen = []

    async def calls() -> list:
        seen.append(active_waits())
        return [
            await where.call({"x": 4}, runner=runner),
            await broken.call({"x": 2}, runner=runner),
            await sleepy.call({"seconds": 30}, runner=bounded),
        ]

    ok, failed, slow = run_with_released_cpus(ray, anyio.run, calls)
    assert seen[0] is not None  # the calls went through the main thread's waits
    assert ok.ok and ok.output["x"] == 4
    assert not failed.ok and "RuntimeError: broken on 2" in failed.error
    assert not slow.ok and "timeout limit exceeded" in slow.error
    assert active_waits() is None

"""`jianmu batch --ray` with no Ray running: the batch starts its own local Ray, runs on it, and
leaves no Ray process behind (run as a real command, in its own process). Its Ray is told from
any other (a test worker's local Ray) by being started below the command's process."""

from __future__ import annotations

import subprocess
import sys
import time

from batch_helpers import (
    calls,
    descendants_of,
    import_ray,
    ray_processes,
    results,
    wait_for,
    write_inputs,
    write_tree,
)

import_ray()  # skipped without Ray, failed with JIANMU_REQUIRE_RAY=1


def test_batch_ray_starts_its_own_local_ray_and_leaves_no_ray_process(tmp_path):
    tree = write_tree(tmp_path)
    inputs = write_inputs(tmp_path, [{"x": 1}, {"x": 2}, {"x": 3}])
    out = tmp_path / "results.jsonl"
    command = [sys.executable, "-m", "jianmu_bt.cli", "batch", str(tree), str(inputs), "--ray"]
    command += ["--workers", "2", "--store", str(tmp_path / "runs.db"), "--out", str(out)]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    seen: set[int] = set()
    try:
        while process.poll() is None:  # the Ray the batch started, while it runs
            seen |= ray_processes() & descendants_of(process.pid)
            time.sleep(0.1)
        err = process.stderr.read() if process.stderr else ""
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(30)
    assert process.returncode == 0, err
    assert [results(out)[line]["status"] for line in (1, 2, 3)] == ["succeeded"] * 3
    assert calls(tmp_path) == {1: 1, 2: 1, 3: 1}
    assert seen, "no Ray process was seen while the batch ran"
    wait_for(lambda: not (ray_processes() & seen), timeout=30)  # every one of them is gone

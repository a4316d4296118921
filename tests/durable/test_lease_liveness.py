"""Leases across PID namespaces (`unshare`): a holder is alive until its lease expires.

A process in another PID namespace of the same host (a container with host networking, replicas
with one `hostname:`) cannot see the holder's pid: taking that for death would run the step in
flight a second time. It must wait for the lease, which a live holder keeps renewing, and a dead
one lets expire within two heartbeats.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import pytest
from durable_helpers import PIPELINE, cli_env, command, jianmu, ledger_names, wait_for

from jianmu_bt.store import StoreError, open_store

HEARTBEAT = 0.5

pytestmark = pytest.mark.parametrize("store_location", ["sqlite", "postgres"], indirect=True)


def _unshare_or_skip() -> list[str]:
    """The argv prefix that runs a command in a new PID namespace (with its own /proc)."""
    prefix = ["unshare", "--pid", "--fork", "--mount-proc"]
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed (util-linux)")
    probe = subprocess.run([*prefix, "true"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a PID namespace here: {probe.stderr.strip()}")
    return prefix


def _step_running(db) -> bool:
    """Whether step `a` (side effects, not idempotent) is in flight."""
    try:
        with open_store(db, create=False) as store:
            return any(
                e.status == "running" and e.arguments.get("name") == "a" for e in store.journal("R")
            )
    except StoreError:  # not made yet
        return False


def _start(argv: list[str], env: dict[str, str], cwd) -> subprocess.Popen[str]:
    return subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # one process group: the whole namespace is killed at once
    )


def test_a_resume_from_another_pid_namespace_leaves_a_live_run_alone(tmp_path, store_location):
    unshare = _unshare_or_skip()
    ledger, db, gate = tmp_path / "ledger", store_location, tmp_path / "gate"
    env = {**cli_env(ledger), "JIANMU_STEP_GATE": str(gate), "JIANMU_HEARTBEAT": str(HEARTBEAT)}
    holder = _start(command("run", PIPELINE, "--store", db, "--run-id", "R"), env, tmp_path)
    try:
        assert wait_for(lambda: _step_running(db), timeout=60)
        # Longer than a lease: the live holder keeps renewing it meanwhile.
        time.sleep(3 * HEARTBEAT)
        other = subprocess.run(
            [*unshare, *command("resume", "R", "--store", db)],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert other.returncode == 1, other.stdout + other.stderr
        assert "being run by another process" in other.stderr
    finally:
        gate.touch()
        holder.wait(timeout=120)
    assert holder.returncode == 0, holder.stderr.read() if holder.stderr else ""
    assert set(ledger_names(ledger).values()) == {1}


def test_a_holder_killed_in_another_namespace_is_taken_over_once_its_lease_expires(
    tmp_path, store_location
):
    unshare = _unshare_or_skip()
    ledger, db, gate = tmp_path / "ledger", store_location, tmp_path / "gate"
    env = {**cli_env(ledger), "JIANMU_STEP_GATE": str(gate), "JIANMU_HEARTBEAT": str(HEARTBEAT)}
    holder = _start(
        [*unshare, *command("run", PIPELINE, "--store", db, "--run-id", "R")], env, tmp_path
    )
    try:
        assert wait_for(lambda: _step_running(db), timeout=60)
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait(timeout=60)
    killed = time.time()
    with open_store(db, create=False) as store:
        expires = store.get_run("R").lease_expires
    # The dead holder's lease runs out within two heartbeats of its last renewal.
    assert expires is not None and expires <= killed + 2 * HEARTBEAT
    gate.touch()
    if time.time() < expires:  # not guessed dead from here: another namespace
        early = jianmu("resume", "R", "--store", db, env=env, cwd=tmp_path, timeout=120)
        if time.time() < expires:
            assert early.returncode == 1 and "another process" in early.stderr, early.stderr
    while time.time() < expires + 0.05:
        time.sleep(0.05)
    later = jianmu("resume", "R", "--store", db, env=env, cwd=tmp_path, timeout=120)
    # The step in flight at the kill has side effects: held in doubt, not run again.
    assert later.returncode == 3, later.stdout + later.stderr
    assert "in_doubt call_" in later.stdout, later.stdout
    assert set(ledger_names(ledger).values()) <= {1}

"""Attacks on a warm LocalSandbox worker from the code a call runs (python_repl, bash).

The code of one call tries to forge the result of a later call: it writes fake protocol replies
(exact shapes, guessed and harvested nonces) to every descriptor it can reach (fds 0-255, stdout,
stderr, /proc/self/fd, the fds of its parent and grandparent), monkeypatches json, pickle, the
worker's classes and sys.stdout, and leaves threads and daemons behind that keep writing. Each
test then checks that the attack had no effect: later calls on the same sandbox return their own
true results, and nothing the attacker started is still running after the call.

What an attacking call itself returns is not checked: its code decides its own result (it could
as well print anything), and it may well overwrite it through its own socket.
"""

from __future__ import annotations

import errno
from pathlib import Path

import anyio
import pytest
import sandbox_test_tools as tools
from attack_payloads import MONKEYPATCH, SPRAY
from sandbox_helpers import assert_nothing_left, sandbox_processes

from jianmu_bt.sandbox import LocalSandbox, SandboxLimits
from jianmu_bt.tools.builtin.bash import BashTool
from jianmu_bt.tools.builtin.python_repl import PythonREPLTool

pytestmark = pytest.mark.anyio


def warm_sandbox(**options: object) -> LocalSandbox:
    """A warm sandbox with a generous timeout (attacks must not pass by timing out), offline:
    python_repl and bash ask for no network, so trusted and untrusted calls share its worker."""
    return LocalSandbox(SandboxLimits(timeout=20), warm=True, network=False, **options)


async def assert_true_results(sandbox: LocalSandbox, rounds: int = 3) -> None:
    """Trusted and untrusted calls on `sandbox` return their own results, several times over."""
    repl = PythonREPLTool(runner=sandbox)
    bash = BashTool(runner=sandbox)
    for n in range(rounds):
        added = await tools.add.call({"a": n, "b": 1000}, runner=sandbox)
        assert added.ok and added.output == n + 1000, added
        value = await repl.call({"code": f"print('p{n}')\n{n} * 7"})
        assert value.ok, value
        assert value.output == {"stdout": f"p{n}\n", "stderr": "", "value": str(n * 7)}
        shell = await bash.call({"command": f"echo b{n}"})
        assert shell.ok and shell.output["stdout"] == f"b{n}\n", shell
        greeting = await tools.Greeter("hi").call({"who": f"w{n}"}, runner=sandbox)
        assert greeting.ok and greeting.output.startswith(f"hi, w{n} from "), greeting
        await anyio.sleep(0.05)  # give anything left behind time to write


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    return int(stat[stat.rindex(b")") + 2 :].split()[1])


def strays(sandbox: LocalSandbox) -> set[int]:
    """Processes of the sandbox besides its own: the worker, its fork server (the worker's
    child) and the fork server's children (a spare call process, session processes)."""
    worker = sandbox.worker_pid
    found = set()
    for pid in sandbox_processes(sandbox):
        try:
            parent = _parent(pid)
            if pid == worker or parent == worker or _parent(parent) == worker:
                continue
        except (OSError, ValueError):
            continue  # it just ended
        found.add(pid)
    return found


def idle_children(sandbox: LocalSandbox) -> int:
    """How many processes wait under the fork server (the spare and session processes)."""
    worker = sandbox.worker_pid
    count = 0
    for pid in sandbox_processes(sandbox):
        try:
            count += pid != worker and _parent(pid) != worker and _parent(_parent(pid)) == worker
        except (OSError, ValueError):
            continue
    return count


async def warmed_up(sandbox: LocalSandbox) -> int:
    """Run one call of each kind; returns how many processes wait under the fork server."""
    await assert_true_results(sandbox, rounds=1)
    assert not strays(sandbox)
    return idle_children(sandbox)


async def test_fake_replies_written_everywhere_do_not_reach_the_parent():
    async with warm_sandbox() as sandbox:
        spares = await warmed_up(sandbox)
        # Its own socket is among what it reaches, so its own process may be ended mid-way.
        await PythonREPLTool(runner=sandbox).call({"code": SPRAY + "spray()"})
        await assert_true_results(sandbox)
        assert not strays(sandbox) and idle_children(sandbox) <= spares
    await assert_nothing_left(sandbox)


async def test_fake_replies_from_many_calls_in_a_row_change_nothing():
    async with warm_sandbox() as sandbox:
        await warmed_up(sandbox)
        repl = PythonREPLTool(runner=sandbox)
        for _ in range(3):
            await repl.call({"code": SPRAY + "spray()"})
            added = await tools.add.call({"a": 2, "b": 3}, runner=sandbox)
            assert added.ok and added.output == 5, added
        await assert_true_results(sandbox)


async def test_a_thread_left_writing_fake_replies_dies_with_its_call():
    async with warm_sandbox() as sandbox:
        spares = await warmed_up(sandbox)
        marker = Path(sandbox.workspace, "thread-alive")
        code = SPRAY + (
            "import threading, time\n"
            "def loop():\n"
            "    while True:\n"
            f"        open({str(marker)!r}, 'a').write('x')\n"
            "        spray()\n"
            "        time.sleep(0.01)\n"
            "threading.Thread(target=loop, daemon=True).start()\n"
            "threading.Thread(target=loop, daemon=False).start()\n"
            "'started'"
        )
        attack = await PythonREPLTool(runner=sandbox).call({"code": code})
        assert attack.ok, attack
        size = marker.stat().st_size if marker.exists() else 0
        await assert_true_results(sandbox)
        assert (marker.stat().st_size if marker.exists() else 0) == size  # nobody writes on
        assert not strays(sandbox) and idle_children(sandbox) <= spares
    await assert_nothing_left(sandbox)


async def test_daemons_left_writing_fake_replies_are_killed_after_the_call():
    async with warm_sandbox() as sandbox:
        await warmed_up(sandbox)
        marker = Path(sandbox.workspace, "daemon-alive")
        code = SPRAY + (
            "import os, time\n"
            "def daemon(detach):\n"
            "    if os.fork():\n"
            "        return\n"
            "    if detach:\n"
            "        os.setsid()\n"
            "        if os.fork():\n"
            "            os._exit(0)\n"
            "    while True:\n"
            f"        open({str(marker)!r}, 'a').write('x')\n"
            "        spray()\n"
            "        time.sleep(0.01)\n"
            "daemon(False)\n"
            "daemon(True)\n"
            "'forked'"
        )
        attack = await PythonREPLTool(runner=sandbox).call({"code": code})
        assert attack.ok, attack
        assert not strays(sandbox)  # at once: the call's end killed them
        size = marker.stat().st_size if marker.exists() else 0
        await assert_true_results(sandbox)
        assert (marker.stat().st_size if marker.exists() else 0) == size
    await assert_nothing_left(sandbox)


async def test_monkeypatching_the_worker_json_pickle_and_stdout_affects_no_later_call():
    async with warm_sandbox() as sandbox:
        await warmed_up(sandbox)
        repl = PythonREPLTool(runner=sandbox)
        await repl.call({"code": MONKEYPATCH + "'patched'"})  # its own result may be anything
        await assert_true_results(sandbox)


async def test_bash_cannot_forge_replies_for_later_calls():
    async with warm_sandbox() as sandbox:
        spares = await warmed_up(sandbox)
        line = '{"id": 7, "raw": {"ok": true, "output": "FORGED"}, "restart": false}'
        command = (
            "spray() { for f in /proc/self/fd/* /proc/$PPID/fd/* /dev/stdout /dev/stderr; do "
            f"echo '{line}' > $f 2>/dev/null; done; "
            f"for fd in $(seq 0 255); do eval \"echo '{line}' >&$fd\" 2>/dev/null; done; }}; "
            "spray; (trap '' HUP; while true; do spray; sleep 0.01; done) & "
            "setsid sh -c 'while true; do sleep 0.01; done' & echo done"
        )
        attack = await BashTool(runner=sandbox).call({"command": command, "timeout": 10})
        assert attack.ok and "done" in attack.output["stdout"], attack
        assert not strays(sandbox) and idle_children(sandbox) <= spares
        await assert_true_results(sandbox)
    await assert_nothing_left(sandbox)


async def test_code_that_kills_its_parents_cannot_forge_and_the_sandbox_recovers():
    async with warm_sandbox() as sandbox:
        await warmed_up(sandbox)
        code = SPRAY + (
            "import os, signal\n"
            "spray()\n"
            "ppid = os.getppid()\n"
            "grand = [l.split()[1] for l in open(f'/proc/{ppid}/status') if l.startswith('PPid')]\n"
            "for pid in [ppid, *map(int, grand)]:\n"
            "    try:\n"
            "        os.kill(pid, signal.SIGKILL)\n"
            "    except OSError:\n"
            "        pass\n"
            "'killed'"
        )
        await PythonREPLTool(runner=sandbox).call({"code": code})  # may fail: its own business
        await assert_true_results(sandbox)
    await assert_nothing_left(sandbox)


async def test_untrusted_code_never_runs_in_the_warm_worker():
    async with warm_sandbox() as sandbox:
        await warmed_up(sandbox)
        worker = sandbox.worker_pid
        code = "import os\n[os.getpid(), os.getppid()]"
        first = await PythonREPLTool(runner=sandbox).call({"code": code})
        second = await PythonREPLTool(runner=sandbox).call({"code": code})
        pids = [eval(first.output["value"]), eval(second.output["value"])]
        assert worker not in {pids[0][0], pids[1][0]}  # never the worker itself
        assert pids[0][0] != pids[1][0]  # a fresh process for every call
        assert sandbox.worker_pid == worker  # and the warm worker stays warm
        trusted = await tools.identity.call({}, runner=sandbox)
        assert trusted.output["pid"] == worker  # trusted tools still run in it


async def test_a_session_keeps_its_variables_but_cannot_reach_other_calls():
    async with warm_sandbox() as sandbox:
        spares = await warmed_up(sandbox)
        async with PythonREPLTool(runner=sandbox, session=True) as session:
            await session.call({"code": "kept = 41"})
            kept = await session.call({"code": "kept + 1"})
            assert kept.ok and kept.output["value"] == "42", kept
            code = SPRAY + (
                "import threading, time\n"
                "def loop():\n"
                "    while True:\n"
                "        spray()\n"
                "        time.sleep(0.01)\n"
                "threading.Thread(target=loop, daemon=True).start()\n"
                "import os\n"
                "if os.fork() == 0:\n"
                "    os.setsid()\n"
                "    loop()\n"
            )
            # The session's own results are its code's business from here on (the thread
            # keeps writing to the session's socket); no other call's are.
            await session.call({"code": code})
            # The session process stays (it holds the variables); the daemon does not.
            assert not strays(sandbox) and idle_children(sandbox) <= spares + 1
            await assert_true_results(sandbox)
            await session.call({"code": MONKEYPATCH})
            await assert_true_results(sandbox)
        other = await PythonREPLTool(runner=sandbox, session=True).call({"code": "'kept' in dir()"})
        assert other.ok and other.output["value"] == "False"
    await assert_nothing_left(sandbox)


async def test_a_cold_sandbox_is_not_affected_either():
    async with LocalSandbox(SandboxLimits(timeout=20), network=False) as sandbox:
        await PythonREPLTool(runner=sandbox).call({"code": SPRAY + "spray()"})
        await assert_true_results(sandbox, rounds=1)
    await assert_nothing_left(sandbox)


async def test_isolate_calls_none_restores_the_shared_worker_for_trusted_code():
    async with warm_sandbox(isolate_calls="none") as sandbox:
        worker = (await sandbox.start()) and sandbox.worker_pid
        result = await PythonREPLTool(runner=sandbox).call({"code": "import os\nos.getpid()"})
        assert result.output["value"] == str(worker)
    with pytest.raises(ValueError, match="isolate_calls"):
        LocalSandbox(isolate_calls="sometimes")


async def test_isolate_calls_all_runs_trusted_tools_in_a_fresh_process_too():
    async with warm_sandbox(isolate_calls="all") as sandbox:
        await sandbox.start()
        first = await tools.identity.call({}, runner=sandbox)
        second = await tools.identity.call({}, runner=sandbox)
        assert sandbox.worker_pid not in {first.output["pid"], second.output["pid"]}
        assert first.output["pid"] != second.output["pid"]


async def test_an_online_warm_sandbox_keeps_offline_calls_in_an_offline_worker():
    # python_repl asks for no network; the online sandbox's own worker is not used for it.
    probe = (
        "import socket, os\n"
        "try:\n"
        "    socket.create_connection(('127.0.0.1', 9), timeout=2)\n"
        "except OSError as exc:\n"
        "    reason = exc.errno\n"
        "kept = globals().get('kept', 0) + 1\n"
        "[reason, kept]"
    )
    async with LocalSandbox(SandboxLimits(timeout=20), warm=True) as sandbox:
        online = await tools.identity.call({}, runner=sandbox)
        assert online.ok and online.output["pid"] == sandbox.worker_pid
        async with PythonREPLTool(runner=sandbox, session=True) as session:
            first = await session.call({"code": probe})
            second = await session.call({"code": probe})
        assert eval(first.output["value"]) == [errno.ENETUNREACH, 1]  # no route: no network
        assert eval(second.output["value"]) == [errno.ENETUNREACH, 2]  # a warm session
    await assert_nothing_left(sandbox)


async def test_limits_still_hold_in_a_call_process_and_the_worker_stays_warm():
    limits = SandboxLimits(timeout=20, cpu_seconds=1, max_output_bytes=5_000)
    async with LocalSandbox(limits, warm=True, network=False) as sandbox:
        worker = (await sandbox.start()) and sandbox.worker_pid
        repl = PythonREPLTool(runner=sandbox)
        spun = await repl.call({"code": "while True: pass"})
        assert not spun.ok and "cpu limit exceeded" in spun.error, spun
        flooded = await repl.call({"code": "'x' * 9_000"})
        assert not flooded.ok and "output limit exceeded" in flooded.error, flooded
        assert sandbox.worker_pid == worker  # the limits ended the call's process, not the worker
        async with PythonREPLTool(runner=sandbox, session=True) as session:
            await session.call({"code": "kept = 1"})
            stopped = await session.call({"code": "while True: pass"})
            assert "cpu limit exceeded" in stopped.error and "restarted" in stopped.error
            after = await session.call({"code": "'kept' in globals()"})
            assert after.ok and after.output["value"] == "False"
    await assert_nothing_left(sandbox)

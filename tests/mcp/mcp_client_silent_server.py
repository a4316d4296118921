"""A would-be MCP server over stdio that never answers, and logs how it is ended.

It reads stdin and answers nothing. It appends one line per event to the file given as its
first argument: `started PID` at start, `eof` when its stdin closes (a polite close), `term` on
SIGTERM (after which it exits). The order tells a test how the client ended it, without timing.
"""

from __future__ import annotations

import os
import signal
import sys


def log(path: str, line: str) -> None:
    with open(path, "a") as handle:
        handle.write(line + "\n")


def main() -> None:
    path = sys.argv[1]

    def on_term(_signum: int, _frame: object) -> None:
        log(path, "term")
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    log(path, f"started {os.getpid()}")
    while sys.stdin.buffer.read(4096):
        pass
    log(path, "eof")
    signal.pause()  # a slow exit: only SIGTERM (or SIGKILL) ends it now


if __name__ == "__main__":
    main()

"""bash: run a shell command in a sandbox, with a timeout, output caps and the exit status.

Like python_repl, the command never runs in the caller's process (see `SandboxedTool`): each call
goes to a runner (a LocalSandbox per call by default). Inside the sandbox the command runs under
`bash -c` (or `/bin/sh -c` where bash is missing) in its own process group, which is killed at the
timeout and when the shell exits, so background jobs do not outlive the call. The sandbox has no
network unless the tool is built with `network=True`.

A command that exits with a status other than 0 (or one of `ok_exit_codes`), or is killed by a
signal, is a failed result: the error says `Error: command exited with status 2` (with what the
status usually means: 127 command not found, 128+n a signal) followed by the ends of stderr and
stdout, and the output dict (`exit_code`, `stdout`, `stderr`) is kept with it.

An optional allow-list or deny-list of command names is checked before anything runs. It helps
keep an agent to the commands it is meant to use; it is not a security boundary (shells have
too many ways to run a program), which is why the command still runs in a sandbox. With a list
configured, constructs the check cannot see through (`$(...)`, backquotes, `eval`, process
substitution) are refused.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping
from typing import IO, Any

from jianmu_bt.sandbox.limits import SandboxLimits
from jianmu_bt.tools.builtin.sandboxed import SandboxedTool
from jianmu_bt.tools.runners import ToolRunner

_SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", "|&", ";;", "{", "}", "!"}
_KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "case", "esac"}
_WRAPPERS = {"sudo", "time", "nohup", "env", "command", "builtin", "nice", "xargs", "exec"}
_OPAQUE = ("$(", "`", "<(", ">(")
_OPAQUE_WORDS = {"eval", "source", "."}
_GRACE = 5.0  # the sandbox's own timeout trails the command's, so the command's is reported
_DRAIN = 2.0  # seconds to keep reading after the shell exited
_TAIL = 2000  # characters of each stream quoted in an error
_STATUS_MEANING = {
    126: "found but not executable",
    127: "command not found",
}


def command_names(command: str) -> list[str]:
    """The program names a shell command line would run (best effort; see the module doc)."""
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    names: list[str] = []
    expect_command = True
    skip_loop_header = False
    for token in lexer:
        if token in _SEPARATORS:
            expect_command, skip_loop_header = True, False
            continue
        if skip_loop_header or not expect_command:
            continue
        if token in _KEYWORDS:
            continue
        if token == "for":
            skip_loop_header = True
            continue
        if "=" in token.split("/")[0] and not token.startswith("="):
            continue  # NAME=value before the command
        name = os.path.basename(token)
        names.append(name)
        expect_command = name in _WRAPPERS
    return names


class CommandPolicy:
    """An allow-list and/or deny-list of command names (basenames)."""

    def __init__(self, allow: Iterable[str] | None = None, deny: Iterable[str] | None = None):
        self.allow = frozenset(allow) if allow is not None else None
        self.deny = frozenset(deny or ())

    @property
    def active(self) -> bool:
        """Whether any list is configured."""
        return self.allow is not None or bool(self.deny)

    def check(self, command: str) -> str | None:
        """None when the command may run, else an error saying what was refused."""
        if not self.active:
            return None
        opaque = [mark for mark in _OPAQUE if mark in command]
        if opaque:
            return f"Error: command refused: {opaque[0]!r} hides which commands run"
        try:
            names = command_names(command)
        except ValueError as exc:
            return f"Error: command refused: cannot parse it ({exc})"
        for name in names:
            if name in _OPAQUE_WORDS:
                return f"Error: command refused: '{name}' hides which commands run"
            if name in self.deny:
                return f"Error: command refused: '{name}' is on the deny-list"
            if self.allow is not None and name not in self.allow and name not in _WRAPPERS:
                allowed = ", ".join(sorted(self.allow))
                return f"Error: command refused: '{name}' is not allowed (allowed: {allowed})"
        return None


def exit_error(code: int, stdout: str, stderr: str) -> str:
    """The error text for a command that ended with `code` (negative: killed by that signal).

    It names the status and what it usually means, then quotes the last characters of stderr and
    stdout, so an LLM reading only the error can act on it.
    """
    if code < 0:
        head = f"Error: command was killed by signal {_signal_name(-code)}"
    else:
        head = f"Error: command exited with status {code}"
        meaning = _STATUS_MEANING.get(code)
        if meaning is None and 128 < code < 128 + 65:
            meaning = f"usually: killed by signal {_signal_name(code - 128)}, 128+{code - 128}"
        if meaning:
            head += f" ({meaning})"
    parts = [head]
    for label, text in (("stderr", stderr), ("stdout", stdout)):
        if text.strip():
            tail = text[-_TAIL:]
            note = f" (last {_TAIL} characters)" if len(text) > _TAIL else ""
            parts.append(f"{label}{note}:\n{tail.rstrip()}")
    if len(parts) == 1:
        parts.append("(no output)")
    return "\n".join(parts)


def _signal_name(number: int) -> str:
    try:
        return f"{signal.Signals(number).name} ({number})"
    except ValueError:
        return str(number)


class BashTool(SandboxedTool):
    """Run a shell command in an isolated sandbox; returns stdout, stderr and the exit code.

    A non-zero exit status (one not in `ok_exit_codes`) or a killing signal is a failed result
    whose error carries the status and the ends of the output; `network=True` gives the
    command network access (off by default).
    """

    name = "bash"
    description = (
        "Run a shell command in an isolated sandbox (working directory: a private workspace, no "
        "network unless enabled) and return its stdout, stderr and exit code. A non-zero exit "
        "status is reported as an error with the output. Output is capped; the command has a "
        "timeout."
    )
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "the command line to run"},
            "timeout": {"type": "number", "description": "seconds before it is killed"},
        },
        "required": ["command"],
    }
    output_schema: dict[str, Any] = {
        "type": "object",
        "description": "exit_code, stdout, stderr and whether output was truncated",
    }
    work = "commands"

    def __init__(
        self,
        *,
        runner: ToolRunner | None = None,
        timeout: float = 30.0,
        max_output_bytes: int = 64_000,
        allow: Iterable[str] | None = None,
        deny: Iterable[str] | None = None,
        shell: str | None = None,
        limits: SandboxLimits | Mapping[str, Any] | None = None,
        workspace: Any = None,
        network: bool | None = None,
        ok_exit_codes: Iterable[int] = (0,),
    ) -> None:
        super().__init__(runner=runner, limits=limits, workspace=workspace, network=network)
        self.ok_exit_codes = tuple(sorted({int(code) for code in ok_exit_codes}))
        self.timeout_seconds = timeout
        self.max_output_bytes = max_output_bytes
        self.policy = CommandPolicy(allow, deny)
        self.shell = shell
        self.sandbox_limits = {"timeout": timeout + _GRACE}

    def sandbox_kwargs(self) -> dict[str, Any]:
        """Constructor arguments for the copy of this tool inside the sandbox."""
        return {
            "timeout": self.timeout_seconds,
            "max_output_bytes": self.max_output_bytes,
            "allow": sorted(self.policy.allow) if self.policy.allow is not None else None,
            "deny": sorted(self.policy.deny),
            "shell": self.shell,
            "ok_exit_codes": list(self.ok_exit_codes),
        }

    def refuse(self, args: Any) -> str | None:
        """The command policy, checked here before the call goes to a sandbox."""
        if isinstance(args, Mapping) and isinstance(args.get("command"), str):
            return self.policy.check(args["command"])
        return None

    def run(self, input: Any) -> Any:
        """Run the command (in the sandbox worker) and collect its output and exit code."""
        command = input.get("command") if isinstance(input, Mapping) else None
        if not isinstance(command, str) or not command.strip():
            return "Error: bash needs a non-empty 'command' string"
        refused = self.policy.check(command)
        if refused:
            return refused
        timeout = self.timeout_seconds
        asked = input.get("timeout")
        if isinstance(asked, (int, float)) and not isinstance(asked, bool) and asked > 0:
            timeout = min(timeout, float(asked))
        shell = self.shell or shutil.which("bash") or "/bin/sh"
        proc = subprocess.Popen(
            [shell, "-c", command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        out, err, timed_out = _collect(proc, timeout, self.max_output_bytes)
        stdout = out.decode("utf-8", errors="replace")
        stderr = err.decode("utf-8", errors="replace")
        output = {"exit_code": proc.returncode, "stdout": stdout, "stderr": stderr}
        if timed_out:
            tail = (stdout + stderr)[-1000:]
            detail = f"the command ran longer than {timeout:g} s and was killed"
            error = f"Error: timeout limit exceeded: {detail}" + (f"\n{tail}" if tail else "")
            return {"ok": False, "error": error, "output": output, "limit": "timeout"}
        if proc.returncode not in self.ok_exit_codes:
            error = exit_error(proc.returncode, stdout, stderr)
            return {"ok": False, "error": error, "output": output, "exit_code": proc.returncode}
        return output


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _collect(proc: subprocess.Popen[bytes], timeout: float, cap: int) -> tuple[bytes, bytes, bool]:
    """Read both pipes (keeping `cap` bytes of each) until EOF.

    The process group is killed at the deadline, and again and again once the shell has exited:
    background jobs would otherwise keep the pipes open (and outlive the call). Reading stops
    `_DRAIN` seconds after the shell exited even if something still holds a pipe.
    """
    if proc.stdout is None or proc.stderr is None:
        raise ValueError("_collect needs a process with both output pipes")
    kept: dict[IO[bytes], bytearray] = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    dropped = dict.fromkeys(kept, 0)
    selector = selectors.DefaultSelector()
    for pipe in kept:
        selector.register(pipe, selectors.EVENT_READ, data=pipe)
    deadline = time.monotonic() + timeout
    timed_out = False
    exited_at: float | None = None
    while selector.get_map():
        now = time.monotonic()
        if proc.poll() is not None:
            exited_at = exited_at or now
            _kill_group(proc.pid)
            if now - exited_at > _DRAIN:
                break
        elif now >= deadline:
            timed_out = True
            _kill_group(proc.pid)
        for key, _ in selector.select(timeout=0.05):
            chunk = os.read(key.fd, 65536)
            if not chunk:
                selector.unregister(key.fileobj)
                continue
            source: IO[bytes] = key.data
            buffer = kept[source]
            room = max(cap - len(buffer), 0)
            buffer += chunk[:room]
            dropped[source] += len(chunk) - min(len(chunk), room)
    selector.close()
    if not timed_out and proc.poll() is None:
        # Both pipes ended but the shell has not exited yet (it may be exiting right now, or it
        # closed its output and runs on): let it end by itself before the deadline, so a
        # finished command is never reported as killed.
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            timed_out = True
    _kill_group(proc.pid)
    proc.wait()
    result = []
    for pipe, buffer in kept.items():
        if dropped[pipe]:
            buffer += f"\n[output truncated: {dropped[pipe]:,} more bytes]".encode()
        pipe.close()
        result.append(bytes(buffer))
    return result[0], result[1], timed_out

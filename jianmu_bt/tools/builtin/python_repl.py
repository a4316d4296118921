"""python_repl: run Python code in a sandbox and return its output and last value.

The code never runs in the caller's process: the tool sends each call to a runner (a
LocalSandbox per call by default, or the runner a caller passes), and refuses to execute when it
finds itself outside a sandbox worker. It captures stdout and stderr (capped), returns the
`repr` of a final expression, and reports exceptions as errors with the traceback of the code.

The code is untrusted (`sandbox_untrusted`): a sandbox never runs it in its long-lived worker but
in a fresh process per call, so it cannot forge or disturb any other call, and whatever it
starts ends with the call. It has no network unless the tool is built with `network=True`.

`PythonREPLTool(session=True)` keeps variables between the calls of one tool instance: its calls
go to one long-lived process of that session (`sandbox_session`), which no other call shares.
Code of one session call can therefore affect the session's later calls (that is what a session
is), never anything else. After a limit is hit the process is replaced and the next result says
the session was restarted. Close it with `await repl.aclose()` (or `async with`).
"""

from __future__ import annotations

import ast
import contextlib
import io
import linecache
import traceback
import uuid
from collections.abc import Mapping
from typing import Any

from jianmu_bt.sandbox.limits import SandboxLimits
from jianmu_bt.tools.builtin.sandboxed import SandboxedTool
from jianmu_bt.tools.runners import ToolRunner

_VALUE_CHARS = 10_000


class CappedText(io.TextIOBase):
    """A text sink that keeps the first `limit` characters and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0

    def writable(self) -> bool:
        """Always writable."""
        return True

    def write(self, text: str) -> int:
        """Keep what fits under the cap; count the rest."""
        room = self.limit - self.kept
        if room > 0:
            piece = text[:room]
            self.parts.append(piece)
            self.kept += len(piece)
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def text(self) -> str:
        """The kept text, with a note when some was dropped."""
        body = "".join(self.parts)
        if self.dropped:
            body += f"\n[output truncated: {self.dropped:,} more characters]"
        return body


class PythonREPLTool(SandboxedTool):
    """Run Python code in an isolated sandbox; returns stdout, stderr and the last value.

    The code has no network unless the tool is built with `network=True` (and the sandbox allows
    it too; see `SandboxedTool`).
    """

    name = "python_repl"
    description = (
        "Run Python code in an isolated sandbox process and return its stdout, stderr and the "
        "repr of the final expression. Use print() for intermediate results."
    )
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {"code": {"type": "string", "description": "Python source to run"}},
        "required": ["code"],
    }
    output_schema: dict[str, Any] = {
        "type": "object",
        "description": "stdout, stderr and value (repr of the last expression, or null)",
    }
    work = "code"
    #: The code comes from outside: never run it in a sandbox's shared worker.
    sandbox_untrusted = True

    def __init__(
        self,
        *,
        runner: ToolRunner | None = None,
        session: bool = False,
        timeout: float = 30.0,
        max_output_chars: int = 20_000,
        limits: SandboxLimits | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        workspace: Any = None,
        network: bool | None = None,
    ) -> None:
        # A session needs one long-lived (warm) worker; otherwise a fresh process per call.
        super().__init__(
            runner=runner, limits=limits, workspace=workspace, warm=session, network=network
        )
        self.session = session
        self.max_output_chars = max_output_chars
        self.session_id = session_id or (uuid.uuid4().hex if session else None)
        self.sandbox_limits = {"timeout": timeout}
        self._namespace: dict[str, Any] | None = None
        self._calls = 0

    @property
    def sandbox_session(self) -> str | None:
        """The key of the sandbox process that keeps this session's variables (None: no session)."""
        return self.session_id if self.session else None

    def sandbox_kwargs(self) -> dict[str, Any]:
        """Constructor arguments for the copy of this tool inside the sandbox."""
        return {
            "session": self.session,
            "max_output_chars": self.max_output_chars,
            "session_id": self.session_id,
            "timeout": self.sandbox_limits["timeout"],
        }

    async def run_in_sandbox(self, args: Any, runner: ToolRunner | None = None) -> Any:
        """The sandbox's result, noting when a session worker was replaced (variables lost)."""
        raw = await super().run_in_sandbox(args, runner)
        if self.session and isinstance(raw, dict) and isinstance(raw.get("output"), dict):
            output = raw["output"]
            if output.get("session_call") == 1 and self._calls > 0:
                output["note"] = "the session was restarted: earlier variables are gone"
            self._calls = output.get("session_call", self._calls)
        elif self.session and isinstance(raw, dict) and raw.get("limit"):
            self._calls = 0
            raw["error"] += " (the session was restarted: earlier variables are gone)"
        return raw

    def run(self, input: Any) -> Any:
        """Execute the code (in the sandbox worker) and collect its output."""
        code = input.get("code") if isinstance(input, Mapping) else None
        if not isinstance(code, str):
            return "Error: python_repl needs a 'code' string"
        if self.session:
            if self._namespace is None:
                self._namespace = {"__name__": "__main__"}
            namespace = self._namespace
        else:
            namespace = {"__name__": "__main__"}
        self._calls += 1
        result = self._run_code(code, namespace)
        if self.session and isinstance(result.get("output"), dict):
            result["output"]["session_call"] = self._calls
        return result

    def _run_code(self, code: str, namespace: dict[str, Any]) -> dict[str, Any]:
        filename = f"<python_repl:{self._calls}>"
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        stdout, stderr = CappedText(self.max_output_chars), CappedText(self.max_output_chars)
        value: Any = None
        try:
            tree = ast.parse(code, filename, "exec")
            last = tree.body[-1] if tree.body else None
            if isinstance(last, ast.Expr):  # its value is evaluated apart, to return it
                tree.body.pop()
            else:
                last = None
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                exec(compile(tree, filename, "exec"), namespace)
                if last is not None:
                    expression = ast.Expression(last.value)
                    value = eval(compile(expression, filename, "eval"), namespace)
        except MemoryError:
            raise  # the sandbox reports the memory limit and replaces the worker
        except SystemExit as exc:
            stderr.write(f"[the code called exit({exc.code!r})]\n")
        except BaseException as exc:
            error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            trace = _user_traceback(exc, filename)
            output = _output(stdout, stderr, None)
            shown = f"\nstdout:\n{output['stdout'][-2000:]}" if output["stdout"] else ""
            return {"ok": False, "error": f"Error: {error}\n{trace}{shown}", "output": output}
        return {"ok": True, "output": _output(stdout, stderr, value)}


def _output(stdout: CappedText, stderr: CappedText, value: Any) -> dict[str, Any]:
    shown = None
    if value is not None:
        shown = repr(value)
        if len(shown) > _VALUE_CHARS:
            shown = shown[:_VALUE_CHARS] + f"... [{len(shown) - _VALUE_CHARS:,} more characters]"
    return {"stdout": stdout.text(), "stderr": stderr.text(), "value": shown}


def _user_traceback(exc: BaseException, filename: str) -> str:
    """The traceback frames that belong to the user's code (not the sandbox's)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    if not frames:
        return ""
    return "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))

"""Executor: runs one sandbox request in the current process and turns the outcome into a result.

Used by the worker for trusted calls and by each call process (`forkserver`) for untrusted ones:
it re-creates the tool from its spec (once per process), runs `await tool.execute_local(args)` on
a private event loop and reports every failure as a raw result, with a limit error for memory and
file size. `encode` writes the JSON line a reply travels as (never pickle).
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import json
import os
from typing import Any

from jianmu_bt.sandbox import isolation
from jianmu_bt.sandbox.failures import format_size, limit_error
from jianmu_bt.sandbox.toolspec import ToolNotPortableError, recreate_tool, spec_key


def _jsonable(value: Any) -> Any:
    """`json.dumps` default: models, dataclasses, sets, bytes; anything else as its text."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


def encode(message: dict[str, Any]) -> bytes:
    """One protocol line: `message` as JSON (`_jsonable` converts the rest), then a newline."""
    return json.dumps(message, default=_jsonable, ensure_ascii=False).encode() + b"\n"


def as_raw(result: Any) -> Any:
    """A tool's result as the raw form a runner returns (a ToolResult becomes its dict)."""
    # A ToolResult (duck-typed: the sandbox layer does not import the tool layer).
    if all(hasattr(result, a) for a in ("ok", "output", "error", "to_dict")):
        return {"ok": result.ok, "output": result.output, "error": result.error}
    return result


class Executor:
    """Runs requests in this process: the tool cache, an event loop, failures as results."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.limits: dict[str, Any] = config.get("limits", {})
        self.pid = os.getpid()
        self.tools: dict[str, Any] = {}
        self.loop: asyncio.AbstractEventLoop | None = None

    def tool(self, spec: dict[str, Any]) -> Any:
        """The tool a spec describes, built once (raises ToolNotPortableError)."""
        key = spec_key(spec)
        if key not in self.tools:
            self.tools[key] = recreate_tool(spec)
        return self.tools[key]

    def execute(self, request: dict[str, Any], per_call_cpu: bool) -> tuple[Any, bool]:
        """(raw result, whether this process should be replaced) of one request."""
        limits = {**self.limits, **(request.get("limits") or {})}
        if per_call_cpu:
            isolation.set_call_cpu_limit(limits.get("cpu_seconds"))
        if self.loop is None:
            self.loop = asyncio.new_event_loop()
        try:
            tool = self.tool(request["tool"])
            raw = as_raw(self.loop.run_until_complete(tool.execute_local(request.get("args"))))
            return raw, False
        except MemoryError:
            memory = format_size(limits.get("memory_bytes") or 0)
            return limit_error("memory", f"the call ran out of its {memory} of memory"), True
        except OSError as exc:
            if exc.errno == errno.EFBIG:
                size = format_size(limits.get("max_file_bytes") or 0)
                return limit_error("files", f"a file grew past the {size} limit ({exc})"), True
            return {"ok": False, "error": f"Error: {type(exc).__name__}: {exc}"}, False
        except ToolNotPortableError as exc:
            return {"ok": False, "error": f"Error: {exc}"}, False
        except BaseException as exc:  # the tool's fault, reported as a result
            error = {"ok": False, "error": f"Error: {type(exc).__name__}: {exc}"}
            return error, not isinstance(exc, Exception)
        finally:
            if os.getpid() != self.pid:  # a fork made by the tool must never get past here
                os._exit(70)

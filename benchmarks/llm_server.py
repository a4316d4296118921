"""A stand-in LLM server on 127.0.0.1 that answers at once, for the LLM benchmarks.

It speaks just enough HTTP/1.1 (keep-alive, `content-length` or chunked bodies) to answer
OpenAI-style `POST .../chat/completions` and Anthropic-style `POST .../messages` with replies of
the shape the real APIs give (ids, usage, finish reasons, the fields those APIs add), so every
client parses what it would parse in production. It runs in a process of its own (on the other
core of a 2-core machine), so the clients measured share nothing with it but the socket.

What it answers, from the request alone (it keeps no conversation):

- Chat Completions, an agent's turns: the first user message says `turns=N`; while the request
  holds fewer than N - 1 tool results the reply asks for one call of `lookup` (`x` = the number of
  results so far), then it answers with text. A model name with `deepseek` in it adds a
  `reasoning_content` to every reply; one with `gemini` gives each tool call an
  `extra_content.google.thought_signature` (Gemini's OpenAI-compatible endpoint).
- Messages (Anthropic): without a `tool_result` in the conversation, a `thinking` block with its
  `signature` and a `tool_use` of `lookup`; with one, a text answer.

The last request bodies are kept (`GET /_requests` gives them, `POST /_reset` forgets them), so
a benchmark can check what a client sent back. `LLMServer` starts it from a benchmark:
`with LLMServer() as server: server.base_url`. Run alone: `python benchmarks/llm_server.py`
prints `port N` and serves until it is killed.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

import httpx

try:  # the server's own decoding is the same for every client: the quicker the better
    from orjson import loads
except ImportError:  # pragma: no cover - langgraph brings orjson (via langsmith)
    from json import loads

TURNS = re.compile(r"turns=(\d+)")
REASONING = "The user wants item {n}: call lookup first."
SIGNATURE = "c2lnbmF0dXJlLW9mLWEtdGhvdWdodA=="  # opaque, as the real ones are
ANSWER = "done"
KEPT = 32  # request bodies remembered for /_requests


def _usage(prompt: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": 12,
        "total_tokens": prompt + 12,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def first_user_text(messages: list[dict[str, Any]]) -> str:
    """The text of the first user message (string content or text parts)."""
    for message in messages:
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def chat_reply(body: dict[str, Any], serial: int) -> dict[str, Any]:
    """A Chat Completions reply to `body` (see the module docstring)."""
    messages = body.get("messages") or []
    model = str(body.get("model") or "bench")
    found = TURNS.search(first_user_text(messages))
    turns = int(found.group(1)) if found else 2
    done = sum(1 for m in messages if m.get("role") == "tool")
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if done < turns - 1:
        call: dict[str, Any] = {
            "id": f"call_{serial:08d}",
            "type": "function",
            "function": {"name": "lookup", "arguments": json.dumps({"x": done})},
        }
        if "gemini" in model:
            call["extra_content"] = {"google": {"thought_signature": SIGNATURE}}
        message["tool_calls"] = [call]
        finish = "tool_calls"
    else:
        message["content"] = ANSWER
        finish = "stop"
    if "deepseek" in model:
        message["reasoning_content"] = REASONING.format(n=done)
    message |= {"refusal": None, "annotations": []}
    return {
        "id": f"chatcmpl-{serial:012d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": _usage(20 + 10 * len(messages)),
        "service_tier": "default",
        "system_fingerprint": "fp_bench",
    }


def messages_reply(body: dict[str, Any], serial: int) -> dict[str, Any]:
    """An Anthropic Messages reply to `body` (see the module docstring)."""
    answered = any(
        isinstance(block, dict) and block.get("type") == "tool_result"
        for message in body.get("messages") or []
        if isinstance(message.get("content"), list)
        for block in message["content"]
    )
    if answered:
        content: list[dict[str, Any]] = [{"type": "text", "text": ANSWER}]
        stop = "end_turn"
    else:
        content = [
            {"type": "thinking", "thinking": REASONING.format(n=0), "signature": SIGNATURE},
            {"type": "tool_use", "id": f"toolu_{serial:08d}", "name": "lookup", "input": {"x": 0}},
        ]
        stop = "tool_use"
    return {
        "id": f"msg_{serial:012d}",
        "type": "message",
        "role": "assistant",
        "model": str(body.get("model") or "claude-bench"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 40,
            "output_tokens": 12,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "service_tier": "standard",
        },
    }


class Handler:
    """Answers the requests of every connection; remembers the last request bodies."""

    def __init__(self) -> None:
        self.serial = 0
        self.requests: deque[dict[str, Any]] = deque(maxlen=KEPT)

    def answer(self, method: str, path: str, raw: bytes) -> tuple[int, bytes]:
        """The status and JSON body for one request."""
        if method == "GET" and path.endswith("/_requests"):
            return 200, json.dumps(list(self.requests)).encode()
        if method == "POST" and path.endswith("/_reset"):
            self.requests.clear()
            return 200, b"{}"
        if method != "POST":
            return 404, b'{"error": {"message": "not found"}}'
        body = loads(raw) if raw else {}
        self.serial += 1
        self.requests.append({"path": path, "body": body})
        if path.endswith("/chat/completions"):
            return 200, json.dumps(chat_reply(body, self.serial)).encode()
        if path.endswith("/messages"):
            return 200, json.dumps(messages_reply(body, self.serial)).encode()
        return 404, b'{"error": {"message": "unknown path"}}'

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serve one keep-alive connection until the client closes it."""
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                if headers.get("transfer-encoding", "").lower() == "chunked":
                    raw = await self._chunked(reader)
                else:
                    raw = await reader.readexactly(int(headers.get("content-length", 0)))
                status, payload = self.answer(method, path.split("?", 1)[0], raw)
                reason = "OK" if status == 200 else "Not Found"
                writer.write(
                    f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
                    f"content-length: {len(payload)}\r\n\r\n".encode()
                    + payload
                )
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    return
        finally:
            writer.close()

    @staticmethod
    async def _chunked(reader: asyncio.StreamReader) -> bytes:
        parts: list[bytes] = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)


async def serve() -> None:
    """Serve on a free port of 127.0.0.1, printing `port N` once listening."""
    handler = Handler()
    server = await asyncio.start_server(handler.connection, "127.0.0.1", 0)
    print(f"port {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


class LLMServer:
    """The server in a process of its own, for `with LLMServer() as server: ...`."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None
        self.root = ""

    def __enter__(self) -> LLMServer:
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve())],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("port "):
            self.process.kill()
            raise RuntimeError(f"the LLM server did not start: {line!r}")
        self.root = f"http://127.0.0.1:{int(line.split()[1])}"
        return self

    @property
    def base_url(self) -> str:
        """The OpenAI-style API root (`.../v1`)."""
        return f"{self.root}/v1"

    def requests(self) -> list[dict[str, Any]]:
        """The last request bodies, oldest first: `[{"path": ..., "body": ...}]`."""
        return httpx.get(f"{self.root}/_requests").json()

    def reset(self) -> None:
        """Forget the recorded requests."""
        httpx.post(f"{self.root}/_reset")

    def __exit__(self, *exc_info: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)


if __name__ == "__main__":
    asyncio.run(serve())  # until LLMServer terminates the process

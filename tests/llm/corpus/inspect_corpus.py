"""Self-check of the recorded-traffic corpus: fetch it, decode every recording, summarise it.

    python tests/llm/corpus/inspect_corpus.py              # every manifest entry
    python tests/llm/corpus/inspect_corpus.py ID [ID...]   # some entries
    python tests/llm/corpus/inspect_corpus.py --file PATH --vendor VENDOR   # a loose cassette

Prints, for each interaction: method, URI, status and a one-line summary of the response
(content block types for Anthropic, message keys and finish_reason for Chat Completions, output
item types for Responses, part keys for Gemini, content keys for Bedrock Converse, and the event
count and names of a stream). Exits non-zero when an entry fails to decode.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import (
    Interaction,
    Response,
    ensure_corpus,
    load_recording,
    parse_cassette,
)
from sources import ARCHIVES, SOURCES


def _names(counter: Counter[str]) -> str:
    return ",".join(f"{k}x{v}" if v > 1 else k for k, v in counter.items())


def _keys(obj: Any) -> str:
    if not isinstance(obj, dict):
        return type(obj).__name__
    return "{" + ",".join(k for k, v in obj.items() if v not in (None, "", [], {})) + "}"


def _sse_json(resp: Response) -> list[Any]:
    out = []
    for event in resp.sse_events():
        try:
            out.append(event.json())
        except ValueError:
            out.append(event.data)
    return out


def _anthropic(resp: Response) -> str:
    if resp.is_sse:
        events = resp.sse_events()
        names: Counter[str] = Counter(e.event or "-" for e in events)
        blocks: list[str] = []
        stop = None
        for data in _sse_json(resp):
            if not isinstance(data, dict):
                continue
            if data.get("type") == "content_block_start":
                blocks.append(data["content_block"]["type"])
            elif data.get("type") == "message_delta":
                stop = data.get("delta", {}).get("stop_reason")
        return f"SSE {len(events)} events [{_names(names)}] blocks={blocks} stop={stop}"
    doc = resp.json
    if isinstance(doc, dict) and doc.get("type") == "message":
        blocks = [b.get("type") for b in doc.get("content", [])]
        return f"message blocks={blocks} stop={doc.get('stop_reason')}"
    if isinstance(doc, dict) and doc.get("type") == "error":
        return f"error {doc['error'].get('type')}: {str(doc['error'].get('message'))[:60]}"
    return f"{len(resp.body)} bytes {_keys(doc)}"


def _openai_chat(resp: Response) -> str:
    if resp.is_sse:
        chunks = _sse_json(resp)
        delta_keys: Counter[str] = Counter()
        finish = []
        tool_chunks = 0
        for chunk in chunks:
            if not isinstance(chunk, dict):
                continue
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                delta_keys.update(k for k, v in delta.items() if v not in (None, "", []))
                tool_chunks += bool(delta.get("tool_calls"))
                if choice.get("finish_reason"):
                    finish.append(choice["finish_reason"])
        done = "[DONE]" in chunks
        return (
            f"SSE {len(chunks)} chunks delta keys [{_names(delta_keys)}] finish={finish}"
            f"{' +[DONE]' if done else ''}"
        )
    doc = resp.json
    if isinstance(doc, dict) and doc.get("choices"):
        choice = doc["choices"][0]
        message = choice.get("message") or {}
        calls = message.get("tool_calls") or []
        extra = f" tool_calls={len(calls)}" if calls else ""
        return f"message {_keys(message)}{extra} finish={choice.get('finish_reason')}"
    if isinstance(doc, dict) and "error" in doc:
        err = doc["error"]
        return f"error {err.get('type') or err.get('code')}: {str(err.get('message'))[:60]}"
    return f"{len(resp.body)} bytes {_keys(doc)}"


def _openai_responses(resp: Response) -> str:
    if resp.is_sse:
        events = resp.sse_events()
        names: Counter[str] = Counter(e.event or "-" for e in events)
        items: list[str] = []
        status = None
        for data in _sse_json(resp):
            if isinstance(data, dict) and data.get("type") == "response.output_item.done":
                items.append(data["item"]["type"])
            if isinstance(data, dict) and data.get("type") in (
                "response.completed",
                "response.incomplete",
                "response.failed",
            ):
                status = data["response"].get("status")
        return f"SSE {len(events)} events [{_names(names)}] items={items} status={status}"
    doc = resp.json
    if isinstance(doc, dict) and doc.get("object") == "response":
        items = [i.get("type") for i in doc.get("output", [])]
        incomplete = doc.get("incomplete_details")
        extra = f" incomplete={incomplete}" if incomplete else ""
        return f"response items={items} status={doc.get('status')}{extra}"
    if isinstance(doc, dict) and "error" in doc:
        err = doc["error"] or {}
        return f"error {err.get('type') or err.get('code')}: {str(err.get('message'))[:60]}"
    return f"{len(resp.body)} bytes {_keys(doc)}"


def _gemini_parts(doc: Any) -> tuple[list[str], Any]:
    cands = (doc or {}).get("candidates") or [{}]
    parts = (cands[0].get("content") or {}).get("parts") or []
    kinds = []
    for part in parts:
        kind = "+".join(k for k in part if k not in ("thought",))
        kinds.append(("thought:" if part.get("thought") else "") + kind)
    return kinds, cands[0].get("finishReason")


def _gemini(resp: Response) -> str:
    if resp.is_sse:
        chunks = [c for c in _sse_json(resp) if isinstance(c, dict)]
    else:
        doc = resp.json
        chunks = doc if isinstance(doc, list) else [doc] if isinstance(doc, dict) else []
        if isinstance(doc, dict) and "error" in doc:
            err = doc["error"]
            return f"error {err.get('status')}: {str(err.get('message'))[:60]}"
        if not chunks:
            return f"{len(resp.body)} bytes"
    kinds: list[str] = []
    finish = None
    for chunk in chunks:
        got, reason = _gemini_parts(chunk)
        kinds += got
        finish = reason or finish
    shape = "SSE" if resp.is_sse else ("array" if isinstance(resp.json, list) else "json")
    return f"{shape} {len(chunks)} chunk(s) parts={kinds} finish={finish}"


def _bedrock(resp: Response) -> str:
    if resp.is_eventstream:
        messages = resp.eventstream_messages()
        names: Counter[str] = Counter(m.event_type or "-" for m in messages)
        deltas: Counter[str] = Counter()
        stop = None
        for message in messages:
            data = message.json()
            if message.event_type == "contentBlockDelta":
                deltas.update(data.get("delta", {}).keys())
            if message.event_type == "messageStop":
                stop = data.get("stopReason")
        return (
            f"eventstream {len(messages)} messages [{_names(names)}] "
            f"deltas [{_names(deltas)}] stop={stop}"
        )
    doc = resp.json
    if isinstance(doc, dict) and "output" in doc:
        content = doc["output"]["message"]["content"]
        return f"converse content={[next(iter(c)) for c in content]} stop={doc.get('stopReason')}"
    return f"{len(resp.body)} bytes {_keys(doc)}"


SUMMARISERS = {
    "anthropic": _anthropic,
    "openai_chat": _openai_chat,
    "openai_responses": _openai_responses,
    "gemini": _gemini,
    "bedrock_converse": _bedrock,
}


def vendor_of(uri: str, default: str) -> str:
    """The wire format an interaction's URI names (a resumed conversation may switch provider)."""
    for marker, vendor in (
        ("api.anthropic.com", "anthropic"),
        ("generativelanguage.googleapis.com", "gemini"),
        ("bedrock-runtime", "bedrock_converse"),
        ("/v1/responses", "openai_responses"),
        ("/chat/completions", "openai_chat"),
    ):
        if marker in uri:
            return vendor
    return default  # LangChain's cassettes redact the URI


def summarise(interaction: Interaction, vendor: str) -> str:
    vendor = vendor_of(interaction.request.uri, vendor)
    try:
        return SUMMARISERS[vendor](interaction.response)
    except Exception as exc:  # a summary must not hide the rest of the report
        return f"(summary failed: {type(exc).__name__}: {exc})"


def _print(interactions: list[Interaction], vendor: str) -> None:
    for n, item in enumerate(interactions):
        uri = item.request.uri.split("?")[0] or "(no request recorded)"
        print(f"  [{n}] {item.request.method} {uri} -> {item.response.status}")
        print(f"      {summarise(item, vendor)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ids", nargs="*", help="manifest ids (default: all)")
    parser.add_argument("--file", type=Path, help="a loose cassette to summarise instead")
    parser.add_argument("--vendor", default="openai_chat", choices=sorted(SUMMARISERS))
    parser.add_argument(
        "--cache-dir", help="corpus cache (default: $JIANMU_CORPUS_DIR or ~/.cache)"
    )
    args = parser.parse_args(argv)

    if args.file:
        _print(parse_cassette(args.file.read_bytes(), args.file.name), args.vendor)
        return 0

    started = time.monotonic()
    root = ensure_corpus(args.cache_dir)
    took = time.monotonic() - started
    sizes = []
    for archive in ARCHIVES:
        path = root / archive.manager / f"{archive.name}-{archive.version}" / archive.filename
        sizes.append(path.stat().st_size if path.exists() else 0)
    print(
        f"corpus at {root}: {len(ARCHIVES)} archives, {sum(sizes) / 1e6:.1f} MB, "
        f"ready in {took:.1f}s; {len(SOURCES)} recordings"
    )
    failures = 0
    wanted = set(args.ids)
    for entry in SOURCES:
        if wanted and entry.id not in wanted:
            continue
        print(f"\n{entry.id}  [{entry.vendor}]  {entry.package}=={entry.version}")
        print(f"  {entry.shows}")
        try:
            recording = load_recording(entry.id, args.cache_dir)
        except Exception as exc:
            failures += 1
            print(f"  FAILED: {type(exc).__name__}: {exc}")
            continue
        _print(list(recording.interactions), entry.vendor)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

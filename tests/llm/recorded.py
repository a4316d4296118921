"""Serving recorded provider traffic (`tests/llm/corpus`) from the fake server.

`recording(id)` loads one recording of the corpus, fetched from the package index on first use;
without the registry the test is skipped, or fails when JIANMU_REQUIRE_CORPUS=1 (CI sets it).
`reply(response, piece=...)` turns a recorded response into a scripted `Reply`: JSON as it was
recorded, a stream in its recorded events or cut into `piece`-byte fragments.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from corpus.corpus import CorpusUnavailable, Recording, Response, load_recording
from llm_fake_server import Reply

REQUIRE = "JIANMU_REQUIRE_CORPUS"


def recording(recording_id: str) -> Recording:
    """The recording `recording_id` of the corpus (see the module docstring)."""
    try:
        return load_recording(recording_id)
    except CorpusUnavailable as exc:
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"the recorded traffic corpus is unavailable: {exc}")
        pytest.skip(f"the recorded traffic corpus is unavailable: {exc}")


def reply(response: Response, piece: int | None = None) -> Reply:
    """A scripted reply that sends `response` as recorded (a stream cut in `piece` bytes)."""
    if response.is_sse or response.is_eventstream:
        kind = (
            "application/vnd.amazon.eventstream"
            if response.is_eventstream
            else ("text/event-stream")
        )
        chunks = response.chunks()
        if piece:
            body = b"".join(chunks)
            chunks = [body[i : i + piece] for i in range(0, len(body), piece)]
        return Reply(status=response.status, raw=chunks, content_type=kind)
    data: Any = response.json
    if data is None:
        return Reply(status=response.status, text=response.text, content_type="text/plain")
    return Reply(status=response.status, json=data)


def replies(rec: Recording, *indexes: int, piece: int | None = None) -> list[Reply]:
    """The recorded responses at `indexes` (all of them by default) as replies, in order."""
    chosen = indexes or tuple(range(len(rec)))
    return [reply(rec.interactions[i].response, piece) for i in chosen]


def sent_messages(rec: Recording, index: int) -> list[dict[str, Any]]:
    """The messages the recorded client sent in request `index` (what the real API accepted)."""
    body = rec.interactions[index].request.json
    assert isinstance(body, dict), f"{rec.id}[{index}] has no JSON request"
    return list(body["messages"])

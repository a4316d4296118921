"""Images and files sent with a message: from state values, URLs or paths inside the workspace.

```yaml
- agent:
    goal: "What is on this receipt? {note}"
    attachments:
      - {image: "{photo}"}          # a state value: bytes, a data: URL, an http(s) URL or a path
      - {file: "invoices/march.pdf"}  # a path inside the workspace
```
Each attachment is a template over state, resolved when the message is made, into a content part
of the OpenAI Chat shape (which every provider converts to its own wire format):
`{"type": "image_url", "image_url": {"url": ...}}` for an image, `{"type": "file", "file":
{"filename", "file_data": "data:<type>;base64,..."}}` for a file. A path is read relative to the
workspace and must stay inside it (symbolic links resolved); a URL is passed on as it is (images
only: a file is sent as data). Anything else is a clear error naming the attachment.
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from jianmu_bt.runtime.templates import render

MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024
"""The largest attachment read (20 MiB, the providers' own request limits are of that order)."""

_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
)


class AttachmentError(ValueError):
    """An attachment that cannot be sent: says which and why."""


@dataclass(frozen=True, slots=True)
class Attachment:
    """One image or file to send: `source` is a template over state (see the module)."""

    kind: Literal["image", "file"]
    source: str


def content_parts(
    attachments: Sequence[Attachment], lookup: Callable[[str], Any], workspace: Path | None
) -> list[dict[str, Any]]:
    """The content parts of `attachments`, their templates resolved with `lookup`."""
    return [_part(a, render(a.source, lookup), workspace) for a in attachments]


def _part(attachment: Attachment, value: Any, workspace: Path | None) -> dict[str, Any]:
    where = f"{attachment.kind} attachment {attachment.source!r}"
    if isinstance(value, (bytes, bytearray)):
        data, name, media = bytes(value), str(attachment.kind), _sniff(bytes(value))
    elif isinstance(value, str) and value.startswith(("http://", "https://", "data:")):
        if attachment.kind == "image" or value.startswith("data:"):
            return _wrap(attachment.kind, value, "attachment")
        raise AttachmentError(f"{where}: a file is sent as data, give a path, not a URL")
    elif isinstance(value, str) and value.strip():
        path = _inside(Path(value.strip()), workspace, where)
        size = path.stat().st_size
        if size > MAX_ATTACHMENT_BYTES:
            raise AttachmentError(
                f"{where}: {path.name} is {size:,} bytes, over {MAX_ATTACHMENT_BYTES:,}"
            )
        data, name = path.read_bytes(), path.name
        media = mimetypes.guess_type(path.name)[0] or _sniff(data)
    else:
        raise AttachmentError(f"{where}: resolved to {type(value).__name__} {value!r}")
    if attachment.kind == "image" and not (media or "").startswith("image/"):
        raise AttachmentError(f"{where}: not an image (its type is {media or 'unknown'})")
    url = f"data:{media or 'application/octet-stream'};base64,{base64.b64encode(data).decode()}"
    return _wrap(attachment.kind, url, name)


def _wrap(kind: str, url: str, name: str) -> dict[str, Any]:
    if kind == "image":
        return {"type": "image_url", "image_url": {"url": url}}
    return {"type": "file", "file": {"filename": name, "file_data": url}}


def _inside(path: Path, workspace: Path | None, where: str) -> Path:
    root = (workspace or Path.cwd()).resolve()
    resolved = (root / path).resolve()
    if not resolved.is_relative_to(root):
        raise AttachmentError(f"{where}: {path} is outside the workspace {root}")
    if not resolved.is_file():
        raise AttachmentError(f"{where}: no file {resolved}")
    return resolved


def _sniff(data: bytes) -> str | None:
    for magic, media in _MAGIC:
        if data.startswith(magic):
            return media
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None

"""Images and files go with an agent's goal, from state values, URLs or workspace paths, in the
wire format of each provider; a path outside the workspace is refused."""

from __future__ import annotations

import base64
import textwrap

import pytest

from jianmu_bt.llm import ScriptedProvider, user_message
from jianmu_bt.llm.anthropic_wire import anthropic_messages
from jianmu_bt.loader import load_tree
from jianmu_bt.nodes.attachments import Attachment, AttachmentError, content_parts

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
PDF = b"%PDF-1.4 a tiny document"

TREE = """
version: 1
state:
  photo: {type: any, input: true}
  note: {type: string, default: "the receipt"}
root:
  agent:
    goal: "What is on {note}?"
    attachments:
      - {image: "{photo}"}
      - {file: "docs/march.pdf"}
"""


def test_yaml_goals_carry_images_from_state_and_files_from_the_workspace(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "march.pdf").write_bytes(PDF)
    (tmp_path / "tree.yaml").write_text(TREE)
    llm = ScriptedProvider(["A receipt for 12 EUR."])
    tree = load_tree(tmp_path / "tree.yaml", llm=llm)
    result = tree.run({"photo": PNG}, timeout=10)
    assert result.ok, result.reason
    goal = llm.calls[0].messages[0]["content"]
    assert goal[0] == {"type": "text", "text": "What is on the receipt?"}
    assert goal[1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert goal[2]["file"]["filename"] == "march.pdf"
    assert goal[2]["file"]["file_data"].startswith("data:application/pdf;base64,")


def test_a_path_outside_the_workspace_is_refused(tmp_path):
    secret = tmp_path / "secret.png"
    secret.write_bytes(PNG)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "link.png").symlink_to(secret)
    for path in ("../secret.png", str(secret), "link.png"):
        with pytest.raises(AttachmentError, match="outside the workspace"):
            content_parts([Attachment("image", path)], {}.get, workspace)


def test_a_file_that_is_not_an_image_is_refused_as_one(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(AttachmentError, match="not an image"):
        content_parts([Attachment("image", "notes.txt")], {}.get, tmp_path)


def test_urls_pass_as_they_are_for_images_and_never_for_files():
    url = "https://example.com/cat.png"
    assert content_parts([Attachment("image", url)], {}.get, None) == [
        {"type": "image_url", "image_url": {"url": url}}
    ]
    with pytest.raises(AttachmentError, match="sent as data"):
        content_parts([Attachment("file", url)], {}.get, None)


def test_a_failed_attachment_fails_the_agent_saying_which(tmp_path):
    (tmp_path / "tree.yaml").write_text(TREE)
    llm = ScriptedProvider(["never asked"])
    result = load_tree(tmp_path / "tree.yaml", llm=llm).run({"photo": PNG}, timeout=10)
    assert not result.ok and "file attachment 'docs/march.pdf'" in result.reason
    assert llm.calls == []


def test_anthropic_gets_image_and_document_blocks():
    parts = content_parts(
        [Attachment("image", "{p}"), Attachment("file", "{d}")],
        {"p": PNG, "d": PDF}.get,
        None,
    )
    message = user_message("Look")
    message["content"] = [{"type": "text", "text": "Look"}, *parts]
    _, turns = anthropic_messages([message])
    kinds = [(b["type"], b.get("source", {}).get("media_type")) for b in turns[0]["content"]]
    assert kinds == [("text", None), ("image", "image/png"), ("document", "application/pdf")]


def test_yaml_attachment_keys_are_checked(tmp_path):
    bad = textwrap.dedent("""
        version: 1
        root:
          agent:
            goal: "x"
            attachments: [{image: "a.png", file: "b.pdf"}]
    """)
    from jianmu_bt.loader import TreeLoadError

    with pytest.raises(TreeLoadError, match="either"):
        load_tree(bad, llm=ScriptedProvider(["x"]))


def test_a_resumed_run_sends_the_attachments_it_read_the_first_time(tmp_path):
    """Paused after the goal was sent, the file then changed: the resumed run's goal holds the
    bytes of the first reading, from the journal, as the model saw them."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "march.pdf").write_bytes(PDF)
    text = TREE.replace("  photo: {type: any, input: true}\n", "").replace(
        '      - {image: "{photo}"}\n', ""
    )
    text = text.replace(
        "root:",
        "tools: [write_file]\ntool_options: {workspace: .}\nguard: {approve: [write_file]}\nroot:",
    )
    text = text.replace(
        'goal: "What is on {note}?"', 'goal: "What is on {note}?"\n    tools: [write_file]'
    )
    (tmp_path / "tree.yaml").write_text(text)
    held = {"tool_calls": [{"name": "write_file", "arguments": {"path": "x.txt", "content": "x"}}]}
    first = ScriptedProvider([held, "done"])
    db = tmp_path / "runs.db"
    result = load_tree(tmp_path / "tree.yaml", llm=first).run(store=db, run_id="R", hold="pause")
    assert result.paused
    (tmp_path / "docs" / "march.pdf").write_bytes(b"%PDF-1.4 changed since")
    second = ScriptedProvider([held, "done"])
    tree = load_tree(tmp_path / "tree.yaml", llm=second)
    resumed = tree.resume("R", store=db, approve=["all"], timeout=20)
    assert resumed.ok, resumed.reason
    goal = resumed.state["messages"][0]["content"]
    assert base64.b64decode(goal[1]["file"]["file_data"].split(",", 1)[1]) == PDF
    assert (tmp_path / "x.txt").read_text() == "x"  # written in the tree's workspace

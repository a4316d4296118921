"""server-everything's resource and prompt demos, through loaded YAML trees: a static document
read into state, a subscription that ends when the server announces an update, and its
`args-prompt` as an LLM and agent template (only the LLM's choices are scripted). The
subscription demo is the example tree of docs/mcp.md, run as the page shows it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp_test_support import ROOT, everything_command

from jianmu_bt.cli import main
from jianmu_bt.llm import ScriptedProvider
from jianmu_bt.loader import load_tree

DOC = ROOT / "docs" / "mcp.md"

HANG_GUARD = 60


def _entry() -> str:
    return f"mcp: {{command: {everything_command()}, args: [stdio], name: everything, timeout: 20}}"


def test_a_tree_reads_a_document_and_fills_args_prompt_from_state() -> None:
    tree_text = f"""
state:
  city: {{type: string, default: Paris}}
  region: {{type: string, default: Texas}}
  doc: string
  dynamic: string
  answer: string
tools:
  - {_entry()}
root:
  sequence:
    children:
      - mcp_resource: {{server: everything, uri: "demo://resource/static/document/features.md",
                        output: doc}}
      - mcp_resource: {{server: everything, uri: "demo://resource/dynamic/text/3", output: dynamic}}
      - llm: {{prompt: {{mcp: everything, name: args-prompt, arguments: {{city: "{{city}}"}}}},
               output: answer}}
      - agent:
          prompt: {{mcp: everything, name: args-prompt,
                    arguments: {{city: "{{city}}", state: "{{region}}"}}}}
          max_iterations: 1
"""
    llm = ScriptedProvider(["Sunny.", "Hot."])
    with load_tree(tree_text, llm=llm) as tree:
        result = tree.run(timeout=HANG_GUARD)
    assert result.ok, result.reason
    assert "# Everything Server - Features" in result.state["doc"]
    assert "demo://resource/dynamic/text/{index}" in result.state["doc"]
    assert result.state["dynamic"].startswith("Resource 3: This is a plaintext resource created at")
    assert llm.calls[0].messages[0] == {"role": "user", "content": "What's weather in Paris?"}
    assert llm.calls[1].messages[0] == {
        "role": "user",
        "content": "What's weather in Paris, Texas?",
    }
    assert (result.state["answer"], result.state["final_answer"]) == ("Sunny.", "Hot.")


def _docs_tree() -> tuple[str, str]:
    """The example tree of docs/mcp.md's "Resources and prompts in a tree", and the error line
    the page shows."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("### Resources and prompts in a tree") :]
    tree = re.search(r"```yaml\n(.*?)```", section, re.S)
    error = re.search(r"```text\n(.*?)```", section, re.S)
    assert tree and error
    return tree.group(1), error.group(1)


def test_the_docs_tree_waits_for_a_subscribed_resource_to_be_updated(tmp_path: Path) -> None:
    # Its tool starts the server's simulated updates (one at once, then one every 5 s) for the
    # URIs this session subscribed to; the resource step subscribes and waits for one. (When
    # the first one comes before the subscription is in place, the next one does.) The second
    # call stops the updates, so the server exits as soon as its stdin closes.
    text, _ = _docs_tree()
    path = tmp_path / "everything_tree.yaml"
    path.write_text(text.replace("mcp-server-everything", everything_command()), encoding="utf-8")
    llm = ScriptedProvider(["Mild."])
    seen: list[tuple[str, str | None]] = []
    with load_tree(path, llm=llm) as tree:
        tree.events.subscribe(
            lambda e: seen.append((e.type, e.node)) if e.type.startswith("mcp.resource.") else None
        )
        result = tree.run({"city": "Oslo"}, timeout=HANG_GUARD)
        assert tree.runner.context.in_flight == 0
    assert result.ok, result.reason
    assert "# Everything Server - Features" in result.state["features"]
    assert result.state["item"].startswith("Resource 1: This is a plaintext resource created at")
    watch = [kind for kind, node in seen if node == "read demo://resource/dynamic/text/1"]
    assert watch == [
        "mcp.resource.subscribed",
        "mcp.resource.updated",
        "mcp.resource.unsubscribed",
        "mcp.resource.read",
    ]
    assert llm.calls[0].messages[0] == {"role": "user", "content": "What's weather in Oslo?"}


def test_validating_a_misspelt_server_prints_what_the_docs_show(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text, error = _docs_tree()
    bad = text.replace(
        'server: everything, uri: "demo://resource/static',
        'server: everythin, uri: "demo://resource/static',
    )
    (tmp_path / "bad.yaml").write_text(bad, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "bad.yaml"]) == 1  # no server is started to find this
    assert error.strip() in capsys.readouterr().out.splitlines()

"""MCP resources and prompts used by YAML trees: the `mcp_resource` node kind and `prompt:` of
`llm` and `agent` nodes, against real server processes (`mcp_resources_server.py` and
`mcp_limits_server.py`, the official SDK's MCPServer over stdio): reads, prompts, halts, size
limits, server names (validated without starting anything) and the replay of a prompted turn in
a resumed durable run. Only the LLM's choices are scripted.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp_resources_server import README
from mcp_test_support import HERE, PYTHON

from jianmu_bt import tool
from jianmu_bt.llm import ScriptedProvider
from jianmu_bt.loader import TreeLoadError, load_tree, validate_source
from jianmu_bt.mcp import MCPClient, MCPToolProvider
from jianmu_bt.store import SQLiteStore

SERVER = str(HERE / "mcp_resources_server.py")
HANG_GUARD = 60
ENTRY = f"mcp: {{command: {PYTHON}, args: [{SERVER}], name: notes, prefix: nt, timeout: 20}}"

TREE = f"""
state:
  index: {{type: string, default: "7"}}
  who: {{type: string, default: Ada}}
  item: string
  readme: string
  data: any
  answer: string
tools:
  - {ENTRY}
root:
  sequence:
    children:
      - mcp_resource: {{name: Item, server: notes, uri: "notes://item/{{index}}", output: item}}
      - selector:
          children:
            - mcp_resource: {{name: AsJson, server: nt, uri: "notes://readme", as: json,
                            output: data}}
            - mcp_resource: {{name: Missing, server: notes, uri: "notes://nope", output: readme}}
            - mcp_resource: {{name: Readme, server: notes, uri: "notes://readme", output: readme}}
      - llm:
          name: Greeter
          prompt: {{mcp: notes, name: greet, arguments: {{name: "{{who}}"}}}}
          output: answer
      - agent:
          name: Reviewer
          prompt: {{mcp: nt, name: review, arguments: {{uri: "notes://item/{{index}}"}}}}
          tools: [nt_touch]
          max_iterations: 2
"""


def test_a_tree_reads_resources_and_uses_prompts_as_llm_templates() -> None:
    touch = {"tool_calls": [{"name": "nt_touch", "arguments": {"uri": "notes://item/7"}}]}
    llm = ScriptedProvider(["Hello, Ada!", touch, "Reviewed."])
    events: list[tuple[str, str | None, dict[str, object]]] = []
    with load_tree(TREE, llm=llm, base_dir=HERE) as tree:
        tree.events.subscribe(
            lambda e: events.append((e.type, e.node, e.data)) if e.type.startswith("mcp.") else None
        )
        result = tree.run(timeout=HANG_GUARD)
    assert result.ok, result.reason
    assert result.state["item"] == "item 7"  # the URI filled from state
    assert result.state["readme"] == README
    assert result.state["data"] is None
    failed = {node: data["error"] for kind, node, data in events if kind == "mcp.resource.failed"}
    assert set(failed) == {"AsJson", "Missing"}
    assert "is not JSON (as: json)" in str(failed["AsJson"])
    assert "notes://nope" in str(failed["Missing"]) and "notes" in str(failed["Missing"])
    assert "Traceback" not in " ".join(map(str, failed.values()))
    read = [(node, data["uri"]) for kind, node, data in events if kind == "mcp.resource.read"]
    assert read == [("Item", "notes://item/7"), ("Readme", "notes://readme")]
    # The llm node's request: the prompt's message (its argument from state) before the rest.
    greet = llm.calls[0].messages
    assert greet[0] == {"role": "user", "content": "Say hello to Ada."}
    assert result.state["answer"] == "Hello, Ada!"
    assert result.state["final_answer"] == "Reviewed."
    # Each turn of the agent: the review prompt's three messages (an embedded resource as its
    # text), fetched again, then the conversation in state (like a system prompt, the prompt is
    # not added to it): the llm node's reply, then on the second turn the call and its result.
    expected = [
        ("user", "Please review notes://item/7."),
        ("user", "text of notes://item/7"),
        ("assistant", "Reviewing."),
    ]
    first, second = llm.calls[1].messages, llm.calls[2].messages
    assert [(m["role"], m["content"]) for m in first] == [*expected, ("assistant", "Hello, Ada!")]
    assert [(m["role"], m["content"]) for m in second[:4]] == [
        *expected,
        ("assistant", "Hello, Ada!"),
    ]
    assert [m["role"] for m in second[4:]] == ["assistant", "tool"]
    assert second[5]["content"] == "touched notes://item/7"


FAULTS = f"""
state: {{answer: string}}
tools:
  - {ENTRY}
llm: {{provider: scripted, replies: ["never"]}}
root:
  llm: {{name: Asker, prompt: {{mcp: notes, name: greet}}, output: answer}}
"""


def test_a_prompt_the_server_refuses_fails_the_node_with_its_reason() -> None:
    llm = ScriptedProvider(["never"])
    with load_tree(FAULTS, llm=llm, base_dir=HERE) as tree:
        result = tree.run(timeout=HANG_GUARD)
    assert not result.ok
    assert result.reason.startswith("Asker: PromptFetchError: MCP prompt 'greet' could not be had")
    assert "MCP server 'notes'" in result.reason
    assert "Traceback" not in result.reason
    assert llm.calls == []  # the LLM was never asked


HALTED = f"""
state: {{readme: string, item: string}}
tools:
  - {ENTRY}
root:
  sequence:
    children:
      - inverter:
          child:
            timeout:
              duration: 1
              child:
                mcp_resource: {{name: Watch, server: notes, uri: "notes://readme",
                                until: updated, wait: 50, output: item}}
      - inverter:
          child:
            timeout:
              duration: 1
              child:
                mcp_resource: {{name: Slow, server: notes, uri: "notes://slow", output: item}}
      - mcp_resource: {{name: Readme, server: notes, uri: "notes://readme", output: readme}}
"""


def test_halted_steps_unsubscribe_cancel_their_read_and_leave_the_server_usable() -> None:
    # Both waits are halted by their Timeout (an Inverter turns that into success): the
    # subscription is taken back, the 30 s read is cancelled, and the same connection then
    # serves the next read.
    seen: list[tuple[str, str | None]] = []
    with load_tree(HALTED, base_dir=HERE) as tree:
        tree.events.subscribe(
            lambda e: seen.append((e.type, e.node)) if e.type.startswith("mcp.resource.") else None
        )
        result = tree.run(timeout=HANG_GUARD)
        assert tree.runner.context.in_flight == 0
        client = tree.providers.catalog.providers[0].client
        assert client.reconnects == 0
    assert result.ok, result.reason
    assert seen == [
        ("mcp.resource.subscribed", "Watch"),
        ("mcp.resource.unsubscribed", "Watch"),
        ("mcp.resource.read", "Readme"),
    ]
    assert result.state["item"] is None
    assert result.state["readme"] == README


BAD = """
state: {{index: string, text: string, answer: string}}
tools:
  - {entry}
llm: {{provider: scripted, replies: ["x"]}}
root:
  sequence:
    children:
      - mcp_resource: {{server: note, uri: "notes://item/{{index}}", output: text}}
      - mcp_resource: {{server: notes, uri: "notes://item/{{indx}}", output: txt}}
      - llm: {{prompt: {{mcp: docs, name: greet, arguments: {{name: "{{index}}"}}}}}}
      - mcp_resource: {{server: notes, uri: "notes://readme", wait: 5}}
"""


@pytest.mark.parametrize("entry", [ENTRY, "calculator"])
def test_validation_locates_unknown_servers_and_keys_without_starting_a_server(entry: str) -> None:
    source = BAD.format(entry=entry)
    found = [(d.line, d.code, d.message) for d in validate_source(source, base_dir=HERE)]
    codes = {(line, code) for line, code, _ in found}
    assert (9, "unknown-mcp-server") in codes
    assert (10, "unknown-state-key") in codes  # {indx} and txt
    assert (11, "unknown-mcp-server") in codes
    assert (12, "invalid-value") in codes
    messages = " | ".join(message for *_, message in found)
    if entry == ENTRY:
        assert "no MCP server named 'note' (did you mean 'notes'?)" in messages
        assert "the tree's MCP servers (by `name:` or `prefix:`): notes, nt" in messages
    else:
        assert "the tree has no `mcp:` entry with a `name:` or `prefix:`" in messages
    assert "`wait` goes with `until: updated`" in messages
    with pytest.raises(TreeLoadError, match="no MCP server named 'docs'"):
        load_tree(source, base_dir=HERE)


DURABLE = """
state: {{answer: string}}
tools:
  - mcp: {{command: {python}, args: [{server}], name: limits, timeout: 20,
          env: {{PROMPT_LOG: "{log}", PROMPT_GATE: "{gate}"}}}}
guard: {{approve: [deploy]}}
root:
  sequence:
    children:
      - llm: {{name: Greeter, prompt: {{mcp: limits, name: greet, arguments: {{name: Ada}}}},
               output: answer}}
      - tool: {{name: Deploy, tool: deploy, arguments: {{target: prod}}}}
"""


@tool(effect_tags=["deploy"])
def deploy(target: str) -> str:
    """Held for approval: the run pauses here, after its LLM turn."""
    return f"deployed {target}"


def test_a_resumed_run_replays_its_llm_turn_without_fetching_the_prompt(tmp_path: Path) -> None:
    # The first run takes the turn (one prompts/get) and pauses at Deploy. Then the server
    # refuses the prompt (as one that is down or changed would): the resume replays the turn
    # from the journal, with no prompts/get and no LLM request, and finishes.
    log, gate = tmp_path / "prompts.log", tmp_path / "gate"
    server = HERE / "mcp_limits_server.py"
    text = DURABLE.format(python=PYTHON, server=server, log=log, gate=gate)
    store = SQLiteStore(tmp_path / "runs.db")
    first = ScriptedProvider(["Hello, Ada!"])
    with load_tree(text, tools=[deploy], llm=first) as tree:
        paused = tree.run(store=store, run_id="R", hold="pause", timeout=HANG_GUARD)
    assert paused.paused, paused.reason
    assert len(first.calls) == 1
    assert log.read_text(encoding="utf-8").splitlines() == ["greet Ada"]
    (held,) = [e for e in store.journal("R") if e.status == "held"]
    gate.touch()
    again = ScriptedProvider(["Hello, Ada!"])
    with load_tree(text, tools=[deploy], llm=again) as tree:
        done = tree.resume("R", store=store, approve=[held.call_id], timeout=HANG_GUARD)
    assert done.ok, done.reason
    assert done.state["answer"] == "Hello, Ada!"
    assert again.calls == []  # replayed, not asked
    assert log.read_text(encoding="utf-8").splitlines() == ["greet Ada"]
    # The gate does shut the prompt: a new run's turn fails with the server's words.
    with load_tree(text, tools=[deploy], llm=ScriptedProvider(["never"])) as tree:
        fresh = tree.run(timeout=HANG_GUARD)
    assert not fresh.ok
    assert "prompts are shut" in fresh.reason


LIMITS = """
state: {data: any, text: string, small: any, answer: string}
root:
  sequence:
    children:
      - mcp_resource: {name: Json, server: lim, uri: "limits://big.json", as: json, output: data}
      - mcp_resource: {name: Text, server: lim, uri: "limits://big.json", max_chars: 1000,
                       output: text}
      - inverter:
          child:
            mcp_resource: {name: TooBig, server: lim, uri: "limits://big.json", as: json,
                           max_chars: 1000, output: small}
      - llm: {name: Big, prompt: {mcp: lim, name: big}, output: answer}
"""


def test_limits_of_resources_and_prompts_with_a_server_passed_in_by_name() -> None:
    # The provider is passed to load_tree with an explicit server_name (its client has none):
    # nodes name the server by it. A 240,000-character JSON resource is parsed whole (the
    # default max_chars is 1,000,000); with max_chars: 1000 a text is cut and says so, and JSON
    # is refused by size; a prompt larger than an LLM node takes fails the node before the LLM.
    client = MCPClient(command=PYTHON, args=[str(HERE / "mcp_limits_server.py")], timeout=20)
    provider = MCPToolProvider(client, server_name="lim")
    llm = ScriptedProvider(["never"])
    events: list[tuple[str, str | None, dict[str, object]]] = []
    assert validate_source(LIMITS, providers=[provider], llm=llm) == []
    with load_tree(LIMITS, providers=[provider], llm=llm) as tree:
        tree.events.subscribe(
            lambda e: events.append((e.type, e.node, e.data)) if e.type.startswith("mcp.") else None
        )
        result = tree.run(timeout=HANG_GUARD)
    assert result.state["data"] == list(range(100_000, 130_000))
    text = result.state["text"]
    assert text.startswith("[100000, 100001,") and len(text) > 1000
    assert text[1000:] == "\n[... cut: 1000 of 240000 characters shown]"
    read = {node: data["cut"] for kind, node, data in events if kind == "mcp.resource.read"}
    assert read == {"Json": False, "Text": True}
    (failed,) = [(node, data["error"]) for kind, node, data in events if kind.endswith(".failed")]
    assert failed == (
        "TooBig",
        "resource 'limits://big.json' of MCP server 'lim' is 240,000 characters, over max_chars "
        "(1,000); JSON is not cut: raise max_chars to read it",
    )
    assert result.state["small"] is None
    assert not result.ok
    assert result.reason.startswith(
        "Big: PromptFetchError: MCP prompt 'big' of server 'lim' is larger than 100000 characters"
    )
    assert llm.calls == []


def test_two_mcp_servers_of_one_name_are_an_error_at_the_second() -> None:
    # Nothing starts: the file's entries and a provider passed in are checked by name.
    tree = f"""
state: {{text: string}}
tools:
  - {ENTRY}
  - mcp: {{command: {PYTHON}, args: [{SERVER}], name: notes}}
  - mcp: {{command: {PYTHON}, args: [{SERVER}], name: other}}
root:
  mcp_resource: {{server: notes, uri: "notes://readme", output: text}}
"""
    found = [(d.line, d.col, d.code, d.message) for d in validate_source(tree, base_dir=HERE)]
    column = tree.splitlines()[4].index("name: notes") + len("name: ") + 1  # at the name
    assert found == [
        (
            5,
            column,
            "duplicate-mcp-server",
            "two MCP servers are named 'notes' (the other: the `mcp:` entry at <string>:4); a "
            "node naming it would get the first: give each `mcp:` entry its own `name:`",
        )
    ]
    passed = MCPToolProvider(MCPClient(command=PYTHON, args=[SERVER]), server_name="other")
    (clash,) = validate_source(tree.replace("name: notes}", "name: x}"), providers=[passed])
    assert (clash.line, clash.code) == (6, "duplicate-mcp-server")
    assert "(the other: a provider passed to load_tree)" in clash.message

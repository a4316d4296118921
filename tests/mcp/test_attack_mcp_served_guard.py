"""Attack class 8 (in process): served calls are checked *and counted* by a guard, and served
tools claim only what their metadata supports.

- `EnforcerGuard` over a GuardEnforcer: budgets and rate limits count served calls, concurrent
  calls cannot share a budget's last use, a call needing a person's approval is refused saying so;
- annotations: all four hints, always: `readOnlyHint` exactly for read-only tools,
  `destructiveHint` for write/delete/exec-like, unknown or undeclared effects, `openWorldHint` for
  network (or undeclared) effects, `idempotentHint` from the tool's `idempotent`;
- a tool that declares no effects counts as the effect `unknown` (budgets).
"""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from jianmu_bt import ToolSet, tool
from jianmu_bt.guard import GuardEnforcer
from jianmu_bt.mcp import annotation_hints, build_mcp_server
from jianmu_bt.mcp.guarded import APPROVAL_NOTE, EnforcerGuard, ServedCallGuard
from jianmu_bt.tools import ToolCall

pytestmark = pytest.mark.anyio


@tool(effect_tags=["http"], blocking=False)
async def fetch(url: str, wait: float = 0.0) -> str:
    """Pretend to fetch a URL."""
    await anyio.sleep(wait)
    return f"fetched {url}"


@tool(effect_tags=["http"], blocking=False)
def broken_fetch(url: str) -> str:
    """Fail to fetch a URL."""
    raise ConnectionError("no route")


@tool(blocking=False)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(effect_tags=["file_write"], parallel_safe=False, blocking=False)
def save_note(text: str) -> str:
    """Pretend to save a note."""
    return "saved"


@tool(effect_tags=["file_write"], parallel_safe=False, idempotent=True, blocking=False)
def put_note(text: str) -> str:
    """Pretend to store a note under a fixed key (the same call twice has one effect)."""
    return "stored"


@tool(effect_tags=["email_send"], blocking=False)
def send_mail(to: str) -> str:
    """Pretend to send a mail (an effect tag the annotations do not know)."""
    return "sent"


TOOLS = ToolSet.from_tools([fetch, broken_fetch, add, save_note, put_note, send_mail])


def served(config: dict, tools: ToolSet = TOOLS) -> tuple[Client, EnforcerGuard]:
    guard = EnforcerGuard(GuardEnforcer.from_config(config))
    return Client(build_mcp_server(tools, guard=guard)), guard


def text(result) -> str:
    return result.content[0].text


# -- budgets, rate limits, approvals ------------------------------------------------------


async def test_a_budget_counts_served_calls() -> None:
    client, guard = served({"budgets": {"http": 1}})
    async with client:
        first = await client.call_tool("fetch", {"url": "https://a.example"})
        second = await client.call_tool("fetch", {"url": "https://b.example"})
    assert not first.is_error
    assert second.is_error
    assert "refused: policy effect_budget: the run's budget of 1 'http' effects is used up" in (
        text(second)
    )
    assert guard.enforcer.context.effect_count("http") == 1


async def test_a_budget_on_unknown_counts_tools_that_declare_no_effects() -> None:
    client, guard = served({"budgets": {"unknown": 1}})
    async with client:
        first = await client.call_tool("add", {"a": 1, "b": 2})
        second = await client.call_tool("add", {"a": 1, "b": 2})
        tagged = await client.call_tool("fetch", {"url": "https://a.example"})
    assert not first.is_error and not tagged.is_error
    assert second.is_error and "budget of 1 'unknown' effects is used up" in text(second)
    assert guard.enforcer.context.effect_count("unknown") == 1


async def test_concurrent_calls_cannot_share_the_last_use_of_a_budget() -> None:
    client, guard = served({"budgets": {"http": 1}})
    results = []
    async with client:

        async def one(url: str) -> None:
            results.append(await client.call_tool("fetch", {"url": url, "wait": 0.3}))

        async with anyio.create_task_group() as tg:
            for n in range(4):
                tg.start_soon(one, f"https://{n}.example")
    assert sorted(r.is_error for r in results) == [False, True, True, True]
    assert guard.running == 0 and guard.enforcer.context.effect_count("http") == 1


async def test_a_failed_call_does_not_use_up_the_budget() -> None:
    client, _ = served({"budgets": {"http": 1}})
    async with client:
        failed = await client.call_tool("broken_fetch", {"url": "https://a.example"})
        fine = await client.call_tool("fetch", {"url": "https://a.example"})
    assert failed.is_error and "no route" in text(failed)
    assert not fine.is_error


async def test_a_rate_limit_counts_served_calls() -> None:
    client, _ = served({"rate_limits": {"add": "1/60s"}})
    async with client:
        first = await client.call_tool("add", {"a": 1, "b": 2})
        second = await client.call_tool("add", {"a": 1, "b": 2})
    assert text(first) == "3"
    assert second.is_error and "policy rate_limit" in text(second)
    assert "Wait at least" in text(second)


@pytest.mark.parametrize("section", ["approve", "confirm"])
async def test_a_call_needing_approval_is_refused_saying_so(section: str) -> None:
    client, guard = served({section: ["save_note"]})
    async with client:
        refused = await client.call_tool("save_note", {"text": "hi"})
        allowed = await client.call_tool("add", {"a": 1, "b": 1})
    assert refused.is_error and APPROVAL_NOTE in text(refused)
    assert not allowed.is_error
    # Nothing is left waiting for a reviewer that an MCP client could never reach.
    assert guard.enforcer.approvals.records() == []


async def test_a_grant_on_the_enforcer_lets_a_held_call_through() -> None:
    client, guard = served({"approve": ["save_note"]})
    guard.enforcer.approvals.grant("save_note", uses=1)
    async with client:
        granted = await client.call_tool("save_note", {"text": "hi"})
        again = await client.call_tool("save_note", {"text": "hi"})
    assert not granted.is_error and again.is_error


async def test_a_denied_tool_is_refused_with_the_policy_name() -> None:
    client, _ = served({"deny": ["save_note"]})
    async with client:
        refused = await client.call_tool("save_note", {"text": "hi"})
    assert refused.is_error and "policy deny_list" in text(refused)


def test_a_cancelled_call_counts_as_if_it_had_its_effect() -> None:
    guard = EnforcerGuard(GuardEnforcer.from_config({"budgets": {"http": 1}}))
    call = ToolCall(name="fetch", arguments={"url": "x"}, id="1")
    assert isinstance(guard, ServedCallGuard)
    assert guard.check(call, fetch) is None
    guard.record(call, fetch, None)  # outcome unknown
    assert guard.enforcer.context.effect_count("http") == 1
    assert "used up" in (guard.check(ToolCall(name="fetch", arguments={}, id="2"), fetch) or "")


# -- annotations --------------------------------------------------------------------------


async def test_builtin_tools_are_annotated_by_their_effects() -> None:
    tools = ToolSet.resolve(["write_file", "http_request", "bash", "calculator", "read_file"])
    async with Client(build_mcp_server(tools)) as client:
        listed = {t.name: t.annotations for t in (await client.list_tools()).tools}
    calculator, read_file = listed["calculator"], listed["read_file"]
    assert calculator.read_only_hint is True and calculator.open_world_hint is False
    assert read_file.read_only_hint is True
    write_file, bash, http = listed["write_file"], listed["bash"], listed["http_request"]
    assert write_file.read_only_hint is False and write_file.destructive_hint is True
    assert write_file.open_world_hint is False and write_file.idempotent_hint is False
    assert bash.read_only_hint is False and bash.destructive_hint is True
    assert http.read_only_hint is False, "an HTTP tool can POST: it is not read-only"
    assert http.open_world_hint is True and http.destructive_hint is False


async def test_idempotent_and_unknown_effects() -> None:
    async with Client(build_mcp_server(TOOLS)) as client:
        listed = {t.name: t.annotations for t in (await client.list_tools()).tools}
    assert listed["put_note"].idempotent_hint is True
    assert listed["save_note"].idempotent_hint is False
    # An effect the mapping does not know is destructive, said so (never left out).
    assert listed["send_mail"].read_only_hint is False
    assert listed["send_mail"].destructive_hint is True
    assert listed["send_mail"].open_world_hint is False
    # A tool that declares nothing has unknown effects: destructive and open-world, said so.
    add_hints = listed["add"]
    assert (add_hints.read_only_hint, add_hints.destructive_hint) == (False, True)
    assert (add_hints.idempotent_hint, add_hints.open_world_hint) == (False, True)


async def test_every_served_tool_states_all_four_hints() -> None:
    async with Client(build_mcp_server(TOOLS)) as client:
        listed = {t.name: t.annotations for t in (await client.list_tools()).tools}
    for name, hints in listed.items():
        stated = (
            hints.read_only_hint,
            hints.destructive_hint,
            hints.idempotent_hint,
            hints.open_world_hint,
        )
        assert all(isinstance(value, bool) for value in stated), name


@pytest.mark.parametrize(
    ("tags", "read_only", "idempotent", "expected"),
    [
        # (readOnlyHint, destructiveHint, idempotentHint, openWorldHint)
        ((), True, False, (True, False, True, False)),
        (("file_read",), True, False, (True, False, True, False)),
        (("web_search",), True, False, (True, False, True, True)),
        (("http",), True, False, (True, False, True, True)),
        ((), False, False, (False, True, False, True)),
        ((), False, True, (False, True, True, True)),
        (("file_read",), False, False, (False, False, False, False)),
        (("http",), False, False, (False, False, False, True)),
        (("net_fetch",), False, True, (False, False, True, True)),
        (("search",), False, False, (False, False, False, True)),
        (("file_delete",), False, False, (False, True, False, False)),
        (("state_write",), False, True, (False, True, True, False)),
        (("http", "file_write"), False, False, (False, True, False, True)),
        (("payments",), False, False, (False, True, False, False)),
    ],
)
def test_hints_for_effect_tags(
    tags: tuple[str, ...], read_only: bool, idempotent: bool, expected: tuple[bool, ...]
) -> None:
    hints = annotation_hints(tags, read_only=read_only, idempotent=idempotent)
    names = ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint")
    assert tuple(hints[name] for name in names) == expected

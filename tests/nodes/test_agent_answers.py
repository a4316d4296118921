"""How agents take replies: typed outputs with re-asks, refusals, cut-off replies, usage limits
checked before each request, costs and fallback models; through YAML and through Python."""

from __future__ import annotations

import textwrap

import pytest
from pydantic import BaseModel

from jianmu_bt import tool
from jianmu_bt.llm import LLMConnectionError, LLMResponse, ScriptedProvider, Usage
from jianmu_bt.llm.costs import Prices
from jianmu_bt.llm.fallback import FallbackProvider
from jianmu_bt.llm.limits import UsageLimits
from jianmu_bt.llm.output import OutputSpec
from jianmu_bt.loader import TreeLoadError, load_tree, validate_source
from jianmu_bt.nodes import react_agent
from jianmu_bt.nodes.turn_outcome import TurnPolicy
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner

FORECAST = """
version: 1
state:
  forecast: {type: dict}
llm:
  provider: scripted
  replies: REPLIES
root:
  agent:
    name: Forecaster
    goal: "Forecast for Paris"
    output: forecast
    output_retries: RETRIES
    output_schema:
      type: object
      properties: {city: {type: string}, high_c: {type: integer}}
      required: [city, high_c]
    output_checks:
      - {check: "high_c < 60", message: "high_c is in degrees Celsius"}
"""


def forecast_tree(replies: list, retries: int = 2):
    text = FORECAST.replace("REPLIES", repr(replies)).replace("RETRIES", str(retries))
    return load_tree(text)


def test_a_typed_answer_lands_in_state_as_an_object():
    tree = forecast_tree(['Sure! ```json\n{"city": "Paris", "high_c": 21}\n```'])
    result = tree.run(timeout=10)
    assert result.ok, result.reason
    assert result.state["forecast"] == {"city": "Paris", "high_c": 21}


def test_an_answer_that_does_not_fit_goes_back_with_what_was_wrong():
    tree = forecast_tree(["It will be sunny.", '{"city": "Paris", "high_c": 70}',
                          '{"city": "Paris", "high_c": 21}'])  # fmt: skip
    result = tree.run(timeout=10)
    assert result.ok, result.reason
    told = [m["content"] for m in result.state["messages"] if m["role"] == "user"][1:]
    assert "not JSON" in told[0] and "high_c is in degrees Celsius" in told[1]
    assert result.state["usage"]["requests"] == 3


def test_an_answer_still_wrong_after_the_retries_fails_the_agent_saying_why():
    tree = forecast_tree(['{"city": "Paris"}', '{"city": "Paris"}'], retries=1)
    result = tree.run(timeout=10)
    assert not result.ok
    assert "after 1 retry" in result.reason and "'high_c' is a required property" in result.reason


def test_the_model_is_told_the_schema_when_its_provider_cannot_enforce_it():
    llm = ScriptedProvider(['{"city": "Paris", "high_c": 21}'])
    tree = load_tree(FORECAST.replace("REPLIES", "[]").replace("RETRIES", "0"), llm=llm)
    assert tree.run(timeout=10).ok
    system = llm.calls[0].messages[0]
    assert system["role"] == "system" and '"high_c"' in system["content"]


def test_validate_checks_the_output_schema_against_the_field_it_writes():
    text = FORECAST.replace("{type: dict}", "{type: string}").replace("REPLIES", "[]")
    text = text.replace("RETRIES", "2")
    found = [d for d in validate_source(text) if d.severity == "error"]
    assert [d.code for d in found] == ["type-mismatch"]
    assert "output_schema describes object values" in found[0].message


def test_a_broken_output_schema_or_check_is_a_load_error_where_it_is():
    text = FORECAST.replace("type: object", "type: 12").replace("REPLIES", "[]")
    with pytest.raises(TreeLoadError, match="output_schema is not a valid JSON Schema"):
        load_tree(text.replace("RETRIES", "2"))
    text = FORECAST.replace("high_c < 60", "high_c <").replace("REPLIES", "[]")
    with pytest.raises(TreeLoadError, match=r":\d+:\d+: error"):
        load_tree(text.replace("RETRIES", "2"))


class Forecast(BaseModel):
    city: str
    high_c: int


def test_python_agents_take_a_pydantic_type_and_validators():
    def not_boiling(value: Forecast) -> Forecast:
        if value.high_c > 60:
            raise ValueError("high_c is in degrees Celsius")
        return value

    class Task(AgentState):
        forecast: Forecast | None = None

    llm = ScriptedProvider(['{"city": "Paris", "high_c": 99}', '{"city": "Paris", "high_c": 20}'])
    policy = TurnPolicy(output=OutputSpec(type=Forecast, validators=[not_boiling]))
    agent = react_agent("A", provider=llm, goal="Forecast", output_key="forecast", policy=policy)
    result = TreeRunner(agent, StateManager(Task)).run(timeout=10)
    assert result.ok, result.reason
    assert result.state["forecast"] == Forecast(city="Paris", high_c=20)


REFUSING = """
version: 1
llm:
  provider: scripted
  replies: [LLMRESPONSE]
root:
  agent: {goal: "Do something bad", ON_REFUSAL}
"""


def refusal() -> LLMResponse:
    return LLMResponse.build("", refusal="I can't help with that.", model="m")


@pytest.mark.parametrize(("policy", "ok"), [("fail", False), ("answer", True)])
def test_a_refusal_fails_the_agent_unless_the_tree_takes_it_as_the_answer(policy, ok):
    llm = ScriptedProvider([refusal()])
    text = REFUSING.replace("[LLMRESPONSE]", "[]").replace("ON_REFUSAL", f"on_refusal: {policy}")
    result = load_tree(text, llm=llm).run(timeout=10)
    assert result.ok is ok
    if ok:
        assert result.state["final_answer"] == "I can't help with that."
    else:
        assert "the model refused: I can't help with that." in result.reason


def cut(text: str) -> LLMResponse:
    return LLMResponse.build(text, finish_reason="length", model="m")


@pytest.mark.parametrize(
    ("policy", "answer"),
    [("fail", None), ("accept", "The first"), ("continue", "The first half, the second.")],
)
def test_a_reply_cut_at_the_token_limit_is_never_a_silent_answer(policy, answer):
    llm = ScriptedProvider([cut("The first"), " half, the second."])
    text = REFUSING.replace("[LLMRESPONSE]", "[]").replace("ON_REFUSAL", f"on_length: {policy}")
    result = load_tree(text, llm=llm).run(timeout=10)
    assert result.state["final_answer"] == answer
    if answer is None:
        assert "cut off at the output token limit" in result.reason


@tool
def lookup(x: int) -> str:
    """Look x up."""
    return f"value {x}"


def looping_llm(turns: int, usage: Usage | None = None) -> ScriptedProvider:
    call = {"tool_calls": [{"name": "lookup", "arguments": {"x": 1}}]}
    if usage is not None:
        call["usage"] = usage.model_dump()
    return ScriptedProvider([call] * turns + ["done"])


def test_a_run_limit_stops_before_the_request_that_would_cross_it():
    text = textwrap.dedent("""
        version: 1
        limits: {requests: 3}
        root:
          agent: {goal: "loop", tools: [lookup]}
    """)
    llm = looping_llm(5)
    result = load_tree(text, llm=llm, tools=[lookup]).run(timeout=10)
    assert not result.ok
    assert len(llm.calls) == 3  # the fourth request was never sent
    assert "requests would reach 4, over its limit of 3" in result.reason


def test_an_input_token_limit_is_checked_against_an_estimate_before_sending():
    llm = looping_llm(5, Usage(input_tokens=400, output_tokens=10))
    agent = react_agent("A", tools=[lookup], provider=llm, goal="loop",
                        limits=UsageLimits(input_tokens=1000))  # fmt: skip
    result = TreeRunner(agent, StateManager(AgentState)).run(timeout=10)
    assert not result.ok and "input_tokens would reach" in result.reason
    assert len(llm.calls) == 2  # 400 + 400 used; a third of about 410 would pass 1000


def test_an_output_limit_caps_max_tokens_at_what_is_left():
    llm = looping_llm(1, Usage(input_tokens=5, output_tokens=30))
    agent = react_agent("A", tools=[lookup], provider=llm, goal="loop",
                        limits=UsageLimits(output_tokens=100))  # fmt: skip
    assert TreeRunner(agent, StateManager(AgentState)).run(timeout=10).ok
    assert [call.options.max_tokens for call in llm.calls] == [100, 70]


def test_tool_calls_over_the_limit_are_not_run():
    ran = []

    @tool
    def record(x: int) -> str:
        """Record x."""
        ran.append(x)
        return "ok"

    llm = ScriptedProvider([{"tool_calls": [{"name": "record", "arguments": {"x": i}}
                                            for i in range(3)]}, "done"])  # fmt: skip
    agent = react_agent("A", tools=[record], provider=llm, goal="go",
                        limits=UsageLimits(tool_calls=2))  # fmt: skip
    result = TreeRunner(agent, StateManager(AgentState)).run(timeout=10)
    assert not result.ok and "tool calls were not run" in result.reason
    assert ran == []


def test_cost_comes_from_the_trees_prices_and_a_cost_limit_stops_the_run():
    text = textwrap.dedent("""
        version: 1
        limits: {cost: 0.05}
        llm:
          provider: scripted
          prices: {input: 10, output: 20}
          replies:
            - {tool_calls: [{name: lookup, arguments: {x: 1}}],
               usage: {input_tokens: 2000, output_tokens: 500}}
            - {tool_calls: [{name: lookup, arguments: {x: 2}}],
               usage: {input_tokens: 2000, output_tokens: 500}}
            - done
        root:
          agent: {goal: "loop", tools: [lookup]}
    """)
    result = load_tree(text, tools=[lookup]).run(timeout=10)
    # The first turn cost 0.02 + 0.01; the second would send about 2,510 input tokens
    # (the first's 2,500 and the tool's answer), 0.025 more: over 0.05, so it is not sent.
    assert result.state["usage"]["cost"] == pytest.approx(0.03)
    assert result.state["usage"]["requests"] == 1
    assert not result.ok and "cost would reach 0.055" in result.reason


def test_a_cost_limit_without_any_price_refuses_to_guess():
    llm = looping_llm(1)
    agent = react_agent("A", tools=[lookup], provider=llm, goal="go",
                        limits=UsageLimits(cost=1.0))  # fmt: skip
    result = TreeRunner(agent, StateManager(AgentState)).run(timeout=10)
    assert not result.ok and "no price is known" in result.reason
    assert llm.calls == []


def test_the_price_table_prices_known_models():
    pytest.importorskip("genai_prices")
    llm = ScriptedProvider(["hi"], model="gpt-4o-mini")
    llm.price_provider = "openai"
    cost = llm.cost(Usage(input_tokens=1_000_000, output_tokens=0), "gpt-4o-mini")
    assert cost is not None and 0 < cost < 10
    assert Prices(input=1, output=2).cost(Usage(input_tokens=500_000, output_tokens=250_000)) == 1


def test_a_failed_turn_goes_to_the_next_model_without_repeating_a_message():
    down = ScriptedProvider([LLMConnectionError("cannot reach", retryable=True)], model="first")
    up = ScriptedProvider(["Paris."], model="second")
    agent = react_agent("A", provider=FallbackProvider([down, up]), goal="Capital of France?")
    result = TreeRunner(agent, StateManager(AgentState)).run(timeout=10)
    assert result.ok and result.state["final_answer"] == "Paris."
    assert [m["role"] for m in up.calls[0].messages] == ["user"]
    assert [m["role"] for m in result.state["messages"]] == ["user", "assistant"]


def test_fallback_from_yaml_names_the_model_that_answered(tmp_path):
    text = textwrap.dedent("""
        version: 1
        llm:
          provider: openai
          model: gone
          base_url: "http://127.0.0.1:9/v1"
          retry: {max_attempts: 1}
          fallback:
            - {provider: scripted, model: backup, replies: ["Paris."]}
        root:
          agent: {goal: "Capital of France?"}
    """)
    events = []
    tree = load_tree(text)
    tree.events.subscribe(events.append)
    result = tree.run(timeout=20, store=tmp_path / "runs.db")
    assert result.ok, result.reason
    answered = [e for e in events if e.type == "llm.response"]
    assert answered[0].data["provider"] == "ScriptedProvider/backup"


def test_the_typed_output_example_in_docs_runs(capsys, monkeypatch):
    import re
    import sys
    import types
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "agents.md"
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), re.S)
    example = next(block for block in blocks if "OutputSpec(type=Forecast" in block)
    module = types.ModuleType("doc_typed_output")  # a real module: pydantic resolves names in it
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(example, str(doc), "exec"), module.__dict__)
    assert capsys.readouterr().out.strip() == "city='Paris' high_c=21"


def test_a_streamed_refusal_goes_to_the_next_model_when_the_list_says_so():
    import anyio

    from jianmu_bt.llm import user_message
    from jianmu_bt.llm.base import StreamCompleted, TextDelta

    refusing = ScriptedProvider([LLMResponse.build("", refusal="No.", model="a")], model="a")
    answering = ScriptedProvider(["Paris is the capital."], model="b")
    llm = FallbackProvider([refusing, answering], fallback_on=["refusal"])

    async def main():
        return [e async for e in llm.stream([user_message("Capital of France?")])]

    events = anyio.run(main)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Paris is the capital."
    assert isinstance(events[-1], StreamCompleted)
    assert events[-1].response.provider == "ScriptedProvider/b"


@pytest.mark.parametrize(
    ("model", "provider", "tokens"),
    [("gpt-4o-mini", "openai", (1000, 500)), ("claude-sonnet-4-5", "anthropic", (300_000, 500))],
)
def test_costs_equal_the_price_tables_own_calculation(model, provider, tokens):
    genai_prices = pytest.importorskip("genai_prices")
    from jianmu_bt.llm.costs import cost_of

    usage = Usage(input_tokens=tokens[0], output_tokens=tokens[1])
    theirs = genai_prices.calc_price(
        genai_prices.Usage(input_tokens=tokens[0], output_tokens=tokens[1]),
        model_ref=model,
        provider_id=provider,
    )
    assert cost_of(usage, model, provider=provider) == pytest.approx(float(theirs.total_price))


def test_the_limits_example_in_docs_runs(capsys):
    import re
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "agents.md"
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), re.S)
    example = next(block for block in blocks if "UsageLimits(requests=3)" in block)
    exec(compile(example, str(doc), "exec"), {"__name__": "doc_limits"})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "3 3"
    assert out[1] == (
        "Looper.llm: UsageLimitExceeded: usage limit of the agent 'Looper.llm': requests would "
        "reach 4, over its limit of 3 (limits.requests); no request was sent"
    )

"""Effect budgets and rate limits against the run's counters."""

import pytest

from jianmu_bt.guard import Decision, EffectBudget, GuardContext, Rate, RateLimit


def test_effect_budget_denies_once_the_count_would_exceed_it(toolset, make_call):
    policy = EffectBudget({"file_write": 2})
    tool = toolset.get("write_file")
    ctx = GuardContext(effect_counts={"file_write": 1})
    assert policy.check(make_call("write_file"), tool, ctx) is None
    ctx.add_effects(["file_write"])
    verdict = policy.check(make_call("write_file"), tool, ctx)
    assert verdict.decision is Decision.DENY
    assert "budget of 2 'file_write' effects is used up (2 used)" in verdict.reason
    assert "Do not make more calls with 'file_write' effects" in verdict.observation()


def test_effect_budget_of_zero_forbids_and_ignores_other_tags(toolset, make_call):
    policy = EffectBudget({"HTTP": 0})
    ctx = GuardContext()
    assert policy.check(make_call("http_request"), toolset.get("http_request"), ctx).decision is (
        Decision.DENY
    )
    assert policy.check(make_call("write_file"), toolset.get("write_file"), ctx) is None
    assert policy.check(make_call("http_request"), None, ctx) is None  # unknown tool: no tags


@pytest.mark.parametrize("bad", [{"http": -1}, {"http": 1.5}, {"http": True}])
def test_effect_budget_refuses_bad_counts(bad):
    with pytest.raises(ValueError, match="EffectBudget\\['http'\\]: must be a whole number"):
        EffectBudget(bad)


def test_rate_limit_denies_inside_the_window_and_says_how_long_to_wait(toolset, make_call, clock):
    policy = RateLimit({"http_request": (2, 60)})
    tool = toolset.get("http_request")
    ctx = GuardContext(clock=clock)
    ctx.add_call_time("http_request")  # t = 0
    clock.advance(10)
    ctx.add_call_time("http_request")  # t = 10
    assert policy.check(make_call("http_request"), tool, ctx).decision is Decision.DENY
    clock.advance(20)  # t = 30: the first run leaves the window at t = 60
    verdict = policy.check(make_call("http_request"), tool, ctx)
    assert "at most 2 times per 60s" in verdict.reason
    assert "Wait at least 30s" in verdict.observation()
    clock.advance(30.5)
    assert policy.check(make_call("http_request"), tool, ctx) is None


def test_rate_limit_applies_through_aliases(toolset, clock):
    from jianmu_bt.tools import ToolCall

    policy = RateLimit({"http": "1/min"})  # alias of http_request
    ctx = GuardContext(clock=clock)
    ctx.add_call_time("http_request")
    verdict = policy.check(ToolCall("http_request", {}, "c1"), toolset.get("http_request"), ctx)
    assert verdict.decision is Decision.DENY


@pytest.mark.parametrize(
    ("text", "count", "seconds"),
    [("5/60s", 5, 60), ("5/min", 5, 60), ("10/1h", 10, 3600), ("3/s", 3, 1), ("2/0.5", 2, 0.5)],
)
def test_rate_parses_the_text_forms(text, count, seconds):
    assert Rate.parse(text) == Rate(count, seconds)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("five per minute", "is not a rate"),
        ("0/60s", "count must be a whole number >= 1"),
        ((5, 0), "window must be > 0"),
        ((5, float("inf")), "window must be > 0"),
        (5, "a rate is a string"),
        ("5000/1s", "at most 1000"),
    ],
)
def test_rate_refuses_bad_values(value, match):
    with pytest.raises(ValueError, match=match):
        Rate.parse(value)

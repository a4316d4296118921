"""GuardConfig and GuardEnforcer.from_config: the YAML shape, its errors and its JSON Schema."""

import pytest
from pydantic import BaseModel, ValidationError

from jianmu_bt.guard import (
    Decision,
    GuardConfig,
    GuardConfigError,
    GuardContext,
    GuardEnforcer,
)
from jianmu_bt.tools import ToolCall


def test_from_config_builds_every_policy(toolset, clock):
    enforcer = GuardEnforcer.from_config(
        {
            "allow": ["calculator", "write_file", "http_request"],
            "deny": ["shell"],
            "confirm": ["write_file"],
            "approve": ["http_request"],
            "budgets": {"http": 1},
            "rate_limits": {"calculator": "1/60s"},
        },
        context=GuardContext(clock=clock),
    )
    names = [p.name for p in enforcer.policies]
    assert names == [
        "deny_list",
        "allow_list",
        "effect_budget",
        "rate_limit",
        "approval_required",
        "confirm_list",
    ]
    batch = [
        ToolCall("bash", {}, "c1"),
        ToolCall("write_file", {"path": "a", "content": ""}, "c2"),
        ToolCall("http_request", {"url": "http://a"}, "c3"),
        ToolCall("calculator", {"expression": "1"}, "c4"),
        ToolCall("calculator", {"expression": "2"}, "c5"),
    ]
    assert [v.decision for v in enforcer.preflight(batch, toolset)] == [
        Decision.DENY,
        Decision.CONFIRM,
        Decision.PENDING,
        Decision.ALLOW,
        Decision.DENY,
    ]


def test_an_empty_config_allows_everything(toolset):
    for config in (None, {}, GuardConfig()):
        enforcer = GuardEnforcer.from_config(config)
        assert enforcer.policies == []
        assert enforcer.check(ToolCall("bash", {}, "c1"), toolset.get("bash")).allowed


def test_an_unknown_key_is_named_with_a_suggestion():
    with pytest.raises(GuardConfigError) as info:
        GuardEnforcer.from_config({"deny": ["bash"], "budget": {"http": 1}})
    message = str(info.value)
    assert message.startswith("guard config: budget: unknown key (did you mean 'budgets'?)")
    assert "known keys: allow, deny, confirm, approve, budgets, rate_limits" in message
    assert info.value.problems[0]["loc"] == "budget"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"budgets": {"http": -1}}, "budgets.http: Input should be greater than or equal to 0"),
        ({"budgets": {"http": "3"}}, "budgets.http: Input should be a valid integer (got '3')"),
        ({"rate_limits": {"http": "5 per minute"}}, "rate_limits.http: '5 per minute' is not a"),
        ({"rate_limits": {"http": {"count": 0, "per_seconds": 1}}}, "rate_limits.http: a rate's"),
        ({"rate_limits": {"http": {"count": 1}}}, "rate_limits.http: a rate mapping has exactly"),
        ({"allow": "bash"}, "allow: Input should be a valid list (got 'bash')"),
        ({"deny": ["bash", ""]}, "deny.1: String should have at least 1 character"),
        (["deny"], "(top level): must be a mapping of allow, deny"),
    ],
)
def test_bad_values_are_named(config, expected):
    with pytest.raises(GuardConfigError) as info:
        GuardEnforcer.from_config(config)
    assert expected in str(info.value)


def test_every_problem_is_reported_at_once():
    with pytest.raises(GuardConfigError) as info:
        GuardConfig.coerce({"budgets": {"a": -1, "b": -2}, "extra": 1})
    assert sorted(p["loc"] for p in info.value.problems) == ["budgets.a", "budgets.b", "extra"]


def test_rates_accept_every_form_and_dump_as_text():
    config = GuardConfig.coerce(
        {"rate_limits": {"a": "5/min", "b": [2, 10], "c": {"count": 3, "per_seconds": 1}}}
    )
    assert config.model_dump(mode="json")["rate_limits"] == {
        "a": "5/60s",
        "b": "2/10s",
        "c": "3/1s",
    }
    assert GuardConfig.coerce(config.model_dump(mode="json")) == config


def test_the_config_embeds_in_a_loader_model_with_a_json_schema():
    class TreeFile(BaseModel):
        name: str
        guard: GuardConfig = GuardConfig()

    schema = TreeFile.model_json_schema()
    guard_schema = schema["$defs"]["GuardConfig"]
    assert guard_schema["additionalProperties"] is False
    assert set(guard_schema["properties"]) == {
        "allow",
        "deny",
        "confirm",
        "approve",
        "budgets",
        "rate_limits",
    }
    rate_schema = guard_schema["properties"]["rate_limits"]["anyOf"][0]["additionalProperties"]
    assert rate_schema["anyOf"][0]["pattern"].startswith("^")
    tree = TreeFile.model_validate({"name": "t", "guard": {"deny": ["bash"]}})
    assert GuardEnforcer.from_config(tree.guard).policies[0].name == "deny_list"
    with pytest.raises(ValidationError) as info:
        TreeFile.model_validate({"name": "t", "guard": {"budgets": {"http": -1}}})
    assert info.value.errors()[0]["loc"] == ("guard", "budgets", "http")

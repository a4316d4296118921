"""ToolNode: an explicit tool step reading from and writing to the run's state."""

import py_trees
from py_trees.common import Status

from jianmu_bt import Tool, tool
from jianmu_bt.guard import GuardEnforcer
from jianmu_bt.nodes import CallOptions, RetryPolicy
from jianmu_bt.runtime import AgentState, StateManager, TreeRunner


class Flow(AgentState):
    expression: str = "2 + 3"
    numbers: dict = {"a": 2, "b": 5}
    total: int | None = None
    label: str | None = None


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


@tool
def echo(text: str) -> str:
    """Echo."""
    return text


class Shout(Tool):
    name = "shout"

    def run(self, input):
        return "Error: too quiet" if not input else input.upper()


def run(root, **kwargs):
    state = StateManager(Flow)
    runner = TreeRunner(root, state, **kwargs)
    return runner, runner.run()


def test_dict_input_from_input_key_and_output_written():
    _, result = run(add.as_node(name="Add", input_key="numbers", output_key="total"))
    assert result.ok and result.state["total"] == 7


def test_arguments_with_state_references():
    node = add.as_node(name="Add", output_key="total", arguments={"a": "{numbers.a}", "b": 10})
    _, result = run(node)
    assert result.state["total"] == 12


def test_text_template_and_non_dict_input():
    nodes = [
        echo.as_node(
            name="Echo", arguments="sum of {numbers.a} and {numbers.b}", output_key="label"
        ),
    ]
    _, result = run(py_trees.composites.Sequence("s", memory=True, children=nodes))
    assert result.state["label"] == "sum of 2 and 5"


def test_error_string_result_is_failure_with_reason():
    from jianmu_bt.nodes import ToolNode

    _, result = run(ToolNode(Shout(), input_key="label"))
    assert result.status == Status.FAILURE
    assert "Error: too quiet" in result.reason


def test_wrong_output_type_is_refused_and_state_unchanged():
    node = echo.as_node(name="Echo", arguments="not a number", output_key="total")
    _, result = run(node)
    assert result.status == Status.FAILURE
    assert "total" in result.reason and result.state["total"] is None


def test_events_for_a_tool_step():
    node = add.as_node(name="Add", input_key="numbers", output_key="total")
    state = StateManager(Flow)
    runner = TreeRunner(node, state)
    events = []
    runner.events.subscribe(events.append)
    runner.run()
    tool_events = [e for e in events if e.type.startswith("tool.call")]
    assert [e.type for e in tool_events] == ["tool.call.started", "tool.call.completed"]
    assert tool_events[1].data["output"] == 7 and tool_events[0].node == "Add"


def test_failed_call_retries_then_succeeds():
    attempts = []

    @tool
    def flaky() -> str:
        """Fails twice."""
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("try again")
        return "ok"

    retry = CallOptions(retry=RetryPolicy.from_retries(3, 0.01))
    node = flaky.as_node(name="Flaky", output_key="label", options=retry)
    _, result = run(node)
    assert result.ok and result.state["label"] == "ok" and len(attempts) == 3


def test_guard_denial_fails_the_step_with_the_guard_reason():
    guard = GuardEnforcer.from_config({"deny": ["add"]})
    node = add.as_node(name="Add", input_key="numbers", output_key="total")
    _, result = run(node, services={"guard": guard})
    assert result.status == Status.FAILURE
    assert "refused by policy" in result.reason and result.state["total"] is None

"""The pytest fixture answers `ask` steps and external calls as the test says, checks the values
against their schemas, and fails at once, naming the step or call, when a value is missing."""

from __future__ import annotations

import re

import pytest

from jianmu_bt.testing import ValueWaitsError, open_tree, run_tree

TREE = """
tools:
  - external:
      name: ci_result
      description: Run CI.
      parameters: {type: object, properties: {branch: {type: string}}}
      output_schema: {type: object, properties: {passed: {type: boolean}}, required: [passed]}
state:
  plan: {type: string}
  verdict: {type: dict, default: {}}
root:
  sequence:
    children:
      - ask: {name: PickPlan, question: "Which plan?", choices: [careful, fast], output: plan}
      - tool: {tool: ci_result, arguments: {branch: main}, output: verdict}
"""


def test_answers_and_results_by_step_and_tool_name(jianmu_run):
    run = jianmu_run(
        TREE, answers={"PickPlan": "fast"}, results={"ci_result": {"passed": True}}, timeout=30
    )
    assert run.succeeded, run.reason
    assert run.state["plan"] == "fast" and run.state["verdict"] == {"passed": True}


@pytest.mark.parametrize(
    ("answers", "results", "said"),
    [
        ({}, {}, "the question 'Which plan?' (step 'PickPlan'"),
        ({"PickPlan": "fast"}, {}, "the external call 'ci_result'"),
        ({"PickPlan": "slow"}, {}, "answer to 'PickPlan' was refused"),
        ({"PickPlan": "fast"}, {"ci_result": {"passed": 1}}, "result for 'ci_result' was refused"),
    ],
)
def test_a_missing_or_refused_value_stops_the_run_at_once_saying_which(answers, results, said):
    with open_tree(TREE) as tree, pytest.raises(ValueWaitsError, match=re.escape(said)):
        run_tree(tree, answers=answers, results=results, timeout=600)

"""Every registered node kind is built from YAML and run at least once."""

import sys
import time
from pathlib import Path

import anyio
import py_trees
from py_trees.common import Status

from jianmu_bt import tool
from jianmu_bt.llm import ScriptedProvider
from jianmu_bt.loader import NODE_KINDS, load_tree, node_info, node_kinds
from jianmu_bt.nodes import AgentLLMNode, ToolExecutor, ToolNode

RUN_KINDS = set()


def run(text, **kwargs):
    tree = load_tree(text, **kwargs)
    try:
        for behaviour in tree.root.iterate():
            info = node_info(behaviour)
            if info is not None and info.part is None:
                RUN_KINDS.add(info.kind)
        return tree.run(timeout=10), tree
    finally:
        tree.close()


def tick_until(tree, statuses, limit=200):
    status = tree.tick()
    for _ in range(limit):
        if status in statuses:
            return status
        time.sleep(0.01)
        status = tree.tick()
    return status


SLOW_FINISHED: list[float] = []  # calls of `slow` that ran to the end


@tool
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await anyio.sleep(seconds)
    SLOW_FINISHED.append(seconds)
    return "done"


def test_node_kinds_have_categories():
    kinds = node_kinds()
    assert kinds == dict(NODE_KINDS)
    assert kinds["sequence"] == "composite" and kinds["agent"] == "agent"
    assert kinds["retry"] == "decorator" and kinds["condition"] == "condition"
    assert kinds["tool"] == "action" and kinds["subtree"] == "subtree"
    assert kinds["behaviour"] == "behaviour"


def test_sequence_selector_parallel_condition_set():
    result, tree = run("""
state:
  log: {type: list, reducer: append, default: []}
root:
  sequence:
    children:
      - selector:
          children:
            - condition: {check: "len(log) > 5"}
            - set: {values: {log: first}}
      - parallel:
          policy: all
          children:
            - set: {values: {log: second}}
            - condition: {check: "True"}
      - condition: {check: "log == ['first', 'second']"}
""")
    assert result.ok, result.reason
    assert result.state["log"] == ["first", "second"]
    assert isinstance(tree.root, py_trees.composites.Sequence) and tree.root.memory is True


def test_parallel_policy_one_and_selected():
    result, _ = run("""
state:
  a: {type: integer, default: 0}
root:
  sequence:
    children:
      - parallel:
          policy: one
          children:
            - success_is_running: {child: {condition: {check: "True"}}}
            - set: {values: {a: 1}}
      - parallel:
          policy: selected
          selected: [1]
          children:
            - running_is_failure: {child: {condition: {check: "True"}}}
            - condition: {check: "True"}
""")
    assert result.ok, result.reason


def test_retry_runs_a_failing_child_again():
    attempts = []

    @tool
    def flaky() -> str:
        """Fail twice, then succeed."""
        attempts.append(1)
        return "Error: not yet" if len(attempts) < 3 else "ok"

    result, _ = run(
        """
state:
  out: {type: string}
root:
  retry: {num_failures: 3, child: {tool: {tool: flaky, output: out}}}
""",
        tools=[flaky],
    )
    assert result.ok and result.state["out"] == "ok" and len(attempts) == 3


def test_timeout_fails_a_slow_child():
    SLOW_FINISHED.clear()
    result, _ = run(
        """
root:
  timeout: {duration: 0.2, child: {tool: {tool: slow, arguments: {seconds: 5}}}}
""",
        tools=[slow],
    )
    assert result.status == Status.FAILURE
    assert not SLOW_FINISHED  # the child was stopped, not waited for


def test_repeat_and_oneshot():
    result, _ = run("""
state:
  log: {type: list, reducer: append, default: []}
  once: {type: list, reducer: append, default: []}
root:
  sequence:
    children:
      - repeat: {num_success: 3, child: {set: {values: {log: tick}}}}
      - repeat:
          num_success: 2
          child:
            sequence:
              children:
                - oneshot: {child: {set: {values: {once: tick}}}}
                - set: {values: {log: again}}
""")
    assert result.ok, result.reason
    assert result.state["log"] == ["tick"] * 3 + ["again"] * 2
    assert result.state["once"] == ["tick"]


def test_inverter_and_status_converters_that_end():
    SLOW_FINISHED.clear()
    result, _ = run(
        """
root:
  sequence:
    children:
      - inverter: {child: {condition: {check: "False"}}}
      - failure_is_success: {child: {condition: {check: "False"}}}
      - inverter: {child: {success_is_failure: {child: {condition: {check: "True"}}}}}
      - running_is_success: {child: {tool: {tool: slow, arguments: {seconds: 5}}}}
      - inverter:
          child: {running_is_failure: {child: {tool: {tool: slow, arguments: {seconds: 5}}}}}
""",
        tools=[slow],
    )
    assert result.ok, result.reason
    assert not SLOW_FINISHED  # a converted RUNNING ends the step; the slow tools are not awaited


def test_converters_that_keep_running():
    for kind, check in (("failure_is_running", "False"), ("success_is_running", "True")):
        tree = load_tree(f'root: {{{kind}: {{child: {{condition: {{check: "{check}"}}}}}}}}')
        try:
            RUN_KINDS.add(kind)
            assert tree.tick() == Status.RUNNING
            assert tree.tick() == Status.RUNNING
        finally:
            tree.close()


def test_tool_step_with_templates_and_input_key():
    result, tree = run("""
state:
  expression: {type: string, default: "6 * 7"}
  args: {type: dict, default: {expression: "1 + 1"}}
  a: {type: string}
  b: {type: string}
tools: [calculator]
root:
  sequence:
    children:
      - tool: {name: Multiply, tool: calculator, arguments: "{expression}", output: a}
      - tool: {tool: calculator, input_key: args, output: b, max_retries: 1, call_timeout: 5}
""")
    assert result.ok, result.reason
    assert (result.state["a"], result.state["b"]) == ("42", "2")
    assert isinstance(tree.nodes["root/0"], ToolNode) and tree.nodes["root/0"].name == "Multiply"


def test_llm_and_executor_steps_with_a_scripted_provider():
    llm = ScriptedProvider(
        [{"tool_calls": [{"name": "calculator", "arguments": {"expression": "17 * 23"}}]}, "391"]
    )
    result, tree = run(
        """
tools: [calculator]
state:
  question: {type: string, default: "What is 17 * 23?"}
root:
  sequence:
    children:
      - set: {values: {messages: [{role: user, content: "{question}"}]}}
      - llm: {system_prompt: "Be exact.", tools: [calculator]}
      - executor: {tools: [calculator]}
      - llm: {}
""",
        llm=llm,
    )
    assert result.ok, result.reason
    assert result.state["final_answer"] == "391"
    tool_messages = [m for m in result.state["messages"] if m["role"] == "tool"]
    assert tool_messages[0]["content"] == "391"
    assert llm.calls[0].messages[0] == {"role": "system", "content": "Be exact."}
    kinds = {type(b) for b in tree.nodes.values()}
    assert {AgentLLMNode, ToolExecutor} <= kinds


def test_agent_subtree_with_its_own_scripted_llm_and_guard():
    result, tree = run("""
tools: [calculator, bash]
state:
  question: {type: string, default: "17 * 23"}
root:
  agent:
    name: Solver
    goal: "Compute {question}"
    tools: [calculator, bash]
    max_iterations: 4
    llm:
      provider: scripted
      replies:
        - {tool_calls: [{name: bash, arguments: {command: "rm -rf /"}}]}
        - {tool_calls: [{name: calculator, arguments: {expression: "17 * 23"}}]}
        - "The answer is 391."
    guard: {deny: [bash]}
""")
    assert result.ok, result.reason
    assert result.state["final_answer"] == "The answer is 391."
    assert result.state["messages"][0] == {"role": "user", "content": "Compute 17 * 23"}
    refused = [m for m in result.state["messages"] if m.get("name") == "bash"]
    assert "refused" in refused[0]["content"]
    infos = [node_info(b) for b in tree.nodes.values()]
    parts = {i.part: i.id for i in infos if i.group == "root"}
    assert parts == {
        None: "root",
        "goal": "root/goal",
        "loop": "root/loop",
        "turn": "root/turn",
        "llm": "root/llm",
        "executor": "root/executor",
    }


def test_behaviour_by_import_path_with_args():
    result, tree = run("""
root:
  sequence:
    children:
      - behaviour: {class: "py_trees.behaviours:Success", name: Fine}
      - behaviour: {class: "py_trees.behaviours:SuccessEveryN", args: {n: 1}}
""")
    assert result.ok, result.reason
    assert type(tree.nodes["root/0"]).__name__ == "Success"
    assert tree.nodes["root/1"].every_n == 1


def test_subtree_kind_runs_a_named_tree():
    result, _ = run("""
state:
  done: {type: boolean, default: false}
trees:
  finish:
    set: {values: {flag: true}}
root:
  subtree: {tree: finish, remap: {flag: done}}
""")
    assert result.ok and result.state["done"] is True


def test_mcp_resource_reads_a_resource_of_a_real_server():
    server = Path(__file__).resolve().parents[1] / "mcp" / "mcp_resources_server.py"
    result, _ = run(f"""
state: {{index: {{type: string, default: "4"}}, item: string}}
tools:
  - mcp: {{command: {sys.executable}, args: [{server}], name: notes, timeout: 20}}
root:
  mcp_resource: {{server: notes, uri: "notes://item/{{index}}", output: item}}
""")
    assert result.ok, result.reason
    assert result.state["item"] == "item 4"


def test_handoff_passes_the_conversation_between_agents_with_their_own_llms():
    result, tree = run("""
tools: [calculator]
root:
  handoff:
    name: Desk
    goal: "What is 17 * 23?"
    agents:
      - name: Triage
        handoffs: [Maths]
        llm:
          provider: scripted
          replies: [{tool_calls: [{name: transfer_to_maths, arguments: {}}]}]
      - name: Maths
        tools: [calculator]
        llm:
          provider: scripted
          replies:
            - {tool_calls: [{name: calculator, arguments: {expression: "17 * 23"}}]}
            - "391"
""")
    assert result.ok, result.reason
    assert result.state["final_answer"] == "391"
    infos = [node_info(b) for b in tree.nodes.values()]
    parts = sorted(i.id for i in infos if i.group == "root" and i.part is not None)
    assert "root/Triage.llm" in parts and "root/Maths.tools" in parts


def test_ask_with_nobody_attending_takes_its_default_in_a_run_that_is_not_durable():
    result, _ = run("""
state:
  plan: {type: string}
root:
  ask: {question: "Which plan?", choices: [careful, fast], output: plan, default: fast}
""")
    assert result.ok, result.reason
    assert result.state["plan"] == "fast"


def test_every_registered_kind_was_run():
    # runs last in this module (pytest keeps file order)
    assert set(node_kinds()) <= RUN_KINDS

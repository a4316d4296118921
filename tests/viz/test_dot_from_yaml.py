"""YAML -> tree -> DOT: every node kind of the loader drawn, parsed by Graphviz, and coloured."""

import shutil
import subprocess

import pydot
import pytest
from py_trees.common import Status

from jianmu_bt.loader import load_tree
from jianmu_bt.viz import SHAPES, STATUS_COLOURS, describe_node, walk

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # pydot's parser

PARTS = """\
version: 1
name: "every kind: a tour"
trees:
  double:
    sequence:
      children:
        - tool: {name: Double, tool: calculator, arguments: {expression: "{n} * 2"}, output: text}
"""

EVERY_KIND = """\
version: 1
name: "every kind: a tour"
state:
  n: {type: integer, default: 2}
  text: {type: string}
  flag: {type: boolean, default: false}
tools: [calculator]
llm:
  provider: scripted
  replies: ["done", "done"]
root:
  parallel:
    name: "All: at once"
    policy: all
    children:
      - sequence:
          name: Steps
          children:
            - subtree: {name: Twice, file: parts.yaml, tree: double}
            - condition: {name: "Is \\"big\\"?", check: "int(text) > 3"}
            - set: {name: Flag, values: {flag: true}}
            - retry:
                num_failures: 2
                child:
                  timeout:
                    duration: 5
                    child:
                      failure_is_success:
                        child:
                          inverter:
                            child:
                              behaviour: {name: Fails, class: "py_trees.behaviours:Failure"}
            - oneshot:
                child:
                  repeat:
                    num_success: 2
                    child: {behaviour: {class: "py_trees.behaviours:Success"}}
      - selector:
          name: Talk
          memory: false
          children:
            - agent: {name: Helper, goal: "hello", max_iterations: 3, output: final_answer}
            - sequence:
                name: ByHand
                children:
                  - llm: {name: Ask, tools: [calculator]}
                  - executor: {name: Run, tools: [calculator]}
"""


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "parts.yaml").write_text(PARTS)
    main = tmp_path / "tour.yaml"
    main.write_text(EVERY_KIND)
    with load_tree(main) as loaded:
        yield loaded


def test_every_kind_gets_its_shape(tree):
    kinds = {describe_node(node).kind for node in walk(tree.root)}
    assert kinds == {
        "parallel",
        "sequence",
        "selector",
        "subtree",
        "tool",
        "condition",
        "set",
        "decorator",
        "behaviour",
        "agent",
        "message",
        "agent loop",
        "llm",
        "executor",
    }
    looks = {node.name: describe_node(node) for node in walk(tree.root)}
    assert looks["Twice"].shape == SHAPES["subtree"] and "parts.yaml" in looks["Twice"].detail
    assert looks['Is "big"?'].caption == "condition: int(text) > 3"
    assert looks["Flag"].caption == "set: flag"


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_graphviz_parses_the_drawing_of_every_kind(tree):
    text = tree.to_dot()
    done = subprocess.run(
        ["dot", "-Tsvg"], input=text, capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    (graph,) = pydot.graph_from_dot_data(text)
    assert graph.get_name() == '"every kind: a tour"'


def test_a_finished_run_colours_the_drawing(tree):
    result = tree.run(timeout=30)
    assert result.status == Status.SUCCESS, result.reason
    text = tree.to_dot(result.node_statuses)
    fill = {
        line.split(" [", 1)[0]: line
        for line in text.splitlines()
        if line.startswith("n") and "[label=" in line
    }
    never_ran = [line for line in fill.values() if "ByHand" in line or "Ask\\n" in line]
    assert never_ran and all(STATUS_COLOURS[Status.INVALID] in line for line in never_ran)
    assert STATUS_COLOURS[Status.SUCCESS] in fill["n0"]
    fails = next(line for line in fill.values() if 'label="Fails\\n' in line)
    assert STATUS_COLOURS[Status.FAILURE] in fails


def test_an_mcp_resource_step_is_drawn_as_a_resource_with_its_uri():
    # Drawing loads the tree but starts no server: the command need not exist here.
    text = """
state: {doc: string}
tools:
  - mcp: {command: some-mcp-server, name: docs}
root:
  sequence:
    children:
      - mcp_resource: {name: Read, server: docs, uri: "notes://today", output: doc}
"""
    with load_tree(text) as loaded:
        looks = {node.name: describe_node(node) for node in walk(loaded.root)}
        dot = loaded.to_dot()
    assert looks["Read"].shape == SHAPES["resource"] == "cylinder"
    assert looks["Read"].caption == "resource: notes://today"
    assert "kind: resource" in dot  # and the legend names it

"""Load + validate + build a 1,000-node tree: our YAML loader next to py_trees' own XML parser.

Both files describe the same tree: a root Sequence of 111 groups, each a Sequence of a writer, a
Retry around a reader, an Inverter around a reader and a Selector of a reader and a writer (9
nodes a group, 1,000 in all). Ours: `load_tree` (parse with positions, pydantic validation,
expansion, state model, analysis, the networkx checks, py_trees behaviours, state and runner).
The anchor: `py_trees.parsers.behaviour_tree_xml.parse_behaviour_tree_xml` with PortsMixin
readers and writers (parse, import pre-pass, key remapping, behaviours with ports). Target: no
slower than the anchor (ratio anchor/ours >= 1).

Run: python benchmarks/bench_loader.py [--quick]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import py_trees
from py_trees.parsers.behaviour_tree_xml import parse_behaviour_tree_xml
from py_trees.ports import PortInformation, PortsMixin

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import Section, Settings, faster, interleave
from benchmarks.suite import main
from jianmu_bt.loader import load_tree

GROUPS = 111  # 9 nodes a group + the root = 1,000 nodes


class Writer(PortsMixin, py_trees.behaviour.Behaviour, register=False):
    """Writes 1 to its output port."""

    INPUT_PORTS: dict[str, PortInformation] = {}
    OUTPUT_PORTS = {"output": PortInformation(data_type=int, required=True)}

    def update(self) -> py_trees.common.Status:
        self._set_output("output", 1)
        return py_trees.common.Status.SUCCESS


class Reader(PortsMixin, py_trees.behaviour.Behaviour, register=False):
    """Succeeds when its input port holds a positive number."""

    INPUT_PORTS = {"input": PortInformation(data_type=int, required=True)}
    OUTPUT_PORTS: dict[str, PortInformation] = {}

    def update(self) -> py_trees.common.Status:
        ok = self.get_input("input") > 0
        return py_trees.common.Status.SUCCESS if ok else py_trees.common.Status.FAILURE


def yaml_text() -> str:
    """The 1,000-node tree in our YAML format."""
    lines = ["version: 1", "name: bench", "state:"]
    lines += [f"  k{i}: {{type: integer, default: 0}}" for i in range(GROUPS)]
    lines += ["root:", "  sequence:", "    name: root", "    children:"]
    for i in range(GROUPS):
        lines += [
            "      - sequence:",
            f"          name: g{i}",
            "          children:",
            f"            - set: {{name: w{i}, values: {{k{i}: 1}}}}",
            f"            - retry: {{name: r{i}, num_failures: 2, "
            f'child: {{condition: {{name: c{i}, check: "k{i} > 0"}}}}}}',
            f"            - inverter: {{name: i{i}, "
            f'child: {{condition: {{name: n{i}, check: "k{i} > 5"}}}}}}',
            f"            - selector: {{name: s{i}, children: ["
            f'{{condition: {{name: x{i}, check: "k{i} == 1"}}}}, '
            f"{{set: {{name: y{i}, values: {{k{i}: 2}}}}}}]}}",
        ]
    return "\n".join(lines) + "\n"


def xml_text() -> str:
    """The same tree in py_trees' BehaviorTree.CPP-style XML."""
    lines = [
        '<root main_tree_to_execute="Main">',
        '  <BehaviorTree ID="Main">',
        '    <Sequence name="root">',
    ]
    for i in range(GROUPS):
        lines += [
            f'      <Sequence name="g{i}">',
            f'        <Writer name="w{i}" output="{{k{i}}}"/>',
            f'        <Retry name="r{i}" num_failures="2">'
            f'<Reader name="c{i}" input="{{k{i}}}"/></Retry>',
            f'        <Inverter name="i{i}"><Reader name="n{i}" input="{{k{i}}}"/></Inverter>',
            f'        <Selector name="s{i}"><Reader name="x{i}" input="{{k{i}}}"/>'
            f'<Writer name="y{i}" output="{{k{i}}}"/></Selector>',
            "      </Sequence>",
        ]
    lines += ["    </Sequence>", "  </BehaviorTree>", "</root>"]
    return "\n".join(lines) + "\n"


def loader(settings: Settings) -> Section:
    """Load a 1,000-node tree from YAML next to py_trees' XML parser on the same tree."""
    registry = {"Writer": Writer, "Reader": Reader}
    with tempfile.TemporaryDirectory() as folder:
        yaml_path = Path(folder) / "bench.yaml"
        xml_path = Path(folder) / "bench.xml"
        yaml_path.write_text(yaml_text(), encoding="utf-8")
        xml_path.write_text(xml_text(), encoding="utf-8")

        def ours() -> float:
            start = time.perf_counter()
            tree = load_tree(yaml_path)
            elapsed = time.perf_counter() - start
            assert len(tree.nodes) == 1000, len(tree.nodes)
            tree.close()
            return elapsed

        def anchor() -> float:
            start = time.perf_counter()
            root = parse_behaviour_tree_xml(str(xml_path), node_registry=registry)
            elapsed = time.perf_counter() - start
            assert sum(1 for _ in root.iterate()) == 1000
            py_trees.blackboard.Blackboard.clear()
            return elapsed

        t = interleave({"ours": ours, "anchor": anchor}, settings.pick(9, 3))
    return Section(
        "Load, validate and build a 1,000-node tree (ratio py_trees XML / ours)",
        [
            faster(
                "load_tree(yaml) vs parse_behaviour_tree_xml(xml)",
                t["ours"],
                t["anchor"],
                "py_trees XML parser",
                1,
            )
        ],
    )


AREAS = {"loader": loader}

if __name__ == "__main__":
    sys.exit(main(AREAS))

"""Load + validate + build a 1,000-node tree: our YAML loader next to py_trees' own XML parser.

Both files describe the same tree: a root Sequence of 111 groups, each a Sequence of a writer, a
Retry around a reader, an Inverter around a reader and a Selector of a reader and a writer (9
nodes a group, 1,000 in all). Ours: `load_tree` (parse with positions, pydantic validation,
expansion, state model, analysis, the networkx checks, py_trees behaviours, state and runner).
The anchor: `py_trees.parsers.behaviour_tree_xml.parse_behaviour_tree_xml` with PortsMixin
readers and writers (parse, import pre-pass, key remapping, behaviours with ports). Target: no
slower than the anchor (ratio anchor/ours >= 1).

The same shape at 100, 1,000 and 10,000 nodes gives the time per node of `load_tree` (target at
most 60 us a node at 10,000, and linear: the time per node at 10,000 within 1.5x of the time per
node at 100), and the memory a loaded 1,000-node tree keeps alive, per node (tracemalloc, after
garbage collection; target at most 1.5 KiB). The garbage collector stays on, as a user has it.

Run: python benchmarks/bench_loader.py [--quick]
"""

from __future__ import annotations

import itertools
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import py_trees
from py_trees.parsers.behaviour_tree_xml import parse_behaviour_tree_xml
from py_trees.ports import PortInformation, PortsMixin

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.harness import Row, Section, Settings, Traced, faster, interleave, limit, within
from benchmarks.suite import main
from jianmu_bt.loader import load_tree

GROUPS = 111  # 9 nodes a group + the root = 1,000 nodes
SIZES = (100, 1000, 10000)  # nodes; 9 a group + the root


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


def yaml_text(groups: int = GROUPS) -> str:
    """The tree of `groups` groups (9 * groups + 1 nodes) in our YAML format."""
    lines = ["version: 1", "name: bench", "state:"]
    lines += [f"  k{i}: {{type: integer, default: 0}}" for i in range(groups)]
    lines += ["root:", "  sequence:", "    name: root", "    children:"]
    for i in range(groups):
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


_fresh = itertools.count()


def renamed(path: Path) -> Path:
    """A copy of the tree at `path` whose state keys (and so its expressions) have names no
    earlier load saw: what the loader shares between loads by text (checked expressions) then
    does not help, and each sample costs what a first load of a file costs."""
    copy = path.with_name(f"fresh-{path.name}")
    prefix = f"v{next(_fresh)}_"
    copy.write_text(re.sub(r"\bk(\d+)\b", prefix + r"\1", path.read_text()), encoding="utf-8")
    return copy


def timed_load(path: Path, nodes: int) -> float:
    """Seconds per node of one `load_tree` of (a freshly renamed copy of) `path`, a tree of
    `nodes` nodes."""
    path = renamed(path)
    start = time.perf_counter()
    tree = load_tree(path)
    elapsed = time.perf_counter() - start
    assert len(tree.nodes) == nodes, len(tree.nodes)
    tree.close()
    return elapsed / nodes


def tree_bytes(path: Path, nodes: int) -> float:
    """Bytes per node a loaded tree keeps alive, after a warm-up load of a tree of the same shape
    with other names (see `renamed`: the number is what a first load of a file keeps)."""
    load_tree(renamed(path)).close()
    with Traced() as memory:
        tree = load_tree(path)
        alive = memory.now()
    assert len(tree.nodes) == nodes
    tree.close()
    return alive / nodes


def loader(settings: Settings) -> Section:
    """Load a 1,000-node tree from YAML next to py_trees' XML parser; sizes; memory."""
    registry = {"Writer": Writer, "Reader": Reader}
    with tempfile.TemporaryDirectory() as folder:
        yaml_path = Path(folder) / "bench.yaml"
        xml_path = Path(folder) / "bench.xml"
        yaml_path.write_text(yaml_text(), encoding="utf-8")
        xml_path.write_text(xml_text(), encoding="utf-8")
        sized = {}
        for nodes in SIZES:
            sized[nodes] = Path(folder) / f"bench{nodes}.yaml"
            sized[nodes].write_text(yaml_text((nodes - 1) // 9), encoding="utf-8")

        def anchor() -> float:
            start = time.perf_counter()
            root = parse_behaviour_tree_xml(str(xml_path), node_registry=registry)
            elapsed = time.perf_counter() - start
            assert sum(1 for _ in root.iterate()) == 1000
            py_trees.blackboard.Blackboard.clear()
            return elapsed

        t = interleave(
            {"ours": lambda: timed_load(yaml_path, 1000) * 1000, "anchor": anchor},
            settings.pick(9, 3),
        )

        def sampler(nodes: int) -> Callable[[], float]:
            return lambda: timed_load(sized[nodes], nodes)

        per_node = interleave({str(n): sampler(n) for n in SIZES}, settings.pick(3, 1), 1)
        memory = tree_bytes(yaml_path, 1000)
    big, small = SIZES[-1], SIZES[0]
    rows: list[Row] = [
        faster(
            "load_tree(yaml) vs parse_behaviour_tree_xml(xml)",
            t["ours"],
            t["anchor"],
            "py_trees XML parser",
            1,
        ),
        limit(
            f"load_tree of a {big:,}-node tree, per node",
            per_node[str(big)],
            60e-6,
            headline="yaml_load",
        ),
        *(limit(f"  {n:,} nodes, per node", per_node[str(n)], None) for n in SIZES[:-1]),
        within(
            f"time per node, {big:,} nodes vs {small} nodes",
            per_node[str(big)],
            per_node[str(small)],
            f"the same shape, {small} nodes",
            1.5,
            "1x is linear (a fixed cost per load makes small trees dearer per node)",
            headline="yaml_linear",
        ),
        limit(
            "loaded 1,000-node tree: memory per node",
            [memory],
            1.5 * 1024,
            "bytes",
            "what the Tree keeps alive after load_tree (tree, state, runner, load-time data), "
            "tracemalloc after garbage collection",
            headline="tree_memory",
        ),
    ]
    return Section("Load, validate and build a YAML tree (ratio py_trees XML / ours)", rows)


AREAS = {"loader": loader}

if __name__ == "__main__":
    sys.exit(main(AREAS))

"""What a load costs: the collector paused around it, linear work, load-time data released.

No wall-clock times: these count calls, look at which objects stay alive and bound memory with
tracemalloc.
"""

from __future__ import annotations

import gc
import itertools
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path

import py_trees
import pytest

from jianmu_bt.loader import TreeLoadError, kinds_work, load_tree, positions, validate_source
from jianmu_bt.loader.bulk import paused_gc
from jianmu_bt.loader.expand import Expander
from jianmu_bt.loader.records import NodeRecord, Unit
from jianmu_bt.loader.units import UnitLoader

GC_SEEN: list[bool] = []


class RecordsGC(py_trees.behaviour.Behaviour):
    """Notes whether the cyclic collector runs while it is built."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        GC_SEEN.append(gc.isenabled())

    def update(self) -> py_trees.common.Status:
        return py_trees.common.Status.SUCCESS


def groups_tree(groups: int, *, unnamed: bool = False) -> str:
    """A tree of `groups` groups of 9 nodes (bench_loader's shape), one state field a group."""
    lines = ["version: 1", "name: big", "state:"]
    lines += [f"  k{i}: {{type: integer, default: 0}}" for i in range(groups)]
    lines += ["root:", "  sequence:", "    children:"]
    for i in range(groups):
        name = "" if unnamed else f"name: g{i}, "
        lines += [
            f"      - sequence: {{{name}children: [",
            f"          {{set: {{values: {{k{i}: 1}}}}}},",
            f"          {{retry: {{num_failures: 2, "
            f'child: {{condition: {{check: "k{i} > 0"}}}}}}}},',
            f'          {{inverter: {{child: {{condition: {{check: "k{i} > 5"}}}}}}}},',
            f'          {{selector: {{children: [{{condition: {{check: "k{i} == 1"}}}}, '
            f"{{set: {{values: {{k{i}: 2}}}}}}]}}}}]}}",
        ]
    return "\n".join(lines) + "\n"


# -- the collector ---------------------------------------------------------------------------


def test_the_collector_is_paused_while_a_tree_loads_and_restored_after(write):
    path = write("t.yaml", "root: {behaviour: {class: 'test_load_cost:RecordsGC'}}\n")
    sys.modules.setdefault("test_load_cost", sys.modules[__name__])
    GC_SEEN.clear()
    assert gc.isenabled()
    tree = load_tree(path)
    tree.close()
    assert GC_SEEN == [False]
    assert gc.isenabled()


def test_the_collector_is_restored_after_a_failed_load_and_a_validation():
    with pytest.raises(TreeLoadError):
        load_tree("root: {condition: {check: 'x >'}}\n")
    assert gc.isenabled()
    assert validate_source("root: {nope: {}}\n")
    assert gc.isenabled()


def test_a_collector_disabled_by_the_caller_stays_disabled():
    gc.disable()
    try:
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_nested_and_concurrent_pauses_restore_the_collector_once_the_last_ends():
    inner_started, outer_may_end = threading.Event(), threading.Event()
    states: list[bool] = []

    def other_load() -> None:
        with paused_gc():
            inner_started.set()
            outer_may_end.wait(5)
        states.append(gc.isenabled())  # the last to leave turns it back on

    with paused_gc():
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still holds it
        thread = threading.Thread(target=other_load)
        thread.start()
        inner_started.wait(5)
    assert not gc.isenabled()  # the other thread's load is still going
    outer_may_end.set()
    thread.join(5)
    assert states == [True] and gc.isenabled()


# -- linear work -----------------------------------------------------------------------------


class CountingSet(set[str]):
    """A set that counts membership tests."""

    tests = 0

    def __contains__(self, item: object) -> bool:
        CountingSet.tests += 1
        return super().__contains__(item)


@pytest.mark.parametrize("groups", [20, 200])
def test_naming_unnamed_nodes_takes_a_few_look_ups_a_node(groups: int):
    loader = UnitLoader()
    unit = loader.load_text(groups_tree(groups, unnamed=True), "<string>", Path.cwd())
    assert unit is not None
    expander = Expander(unit, loader)
    expander._names = CountingSet()
    CountingSet.tests = 0
    expander.expand()
    names = [record.name for record in expander.records.values()]
    assert len(set(names)) == len(names) == groups * 9 + 1
    assert "Sequence #2" in names and f"Sequence #{groups + 1}" in names
    assert CountingSet.tests <= 3 * len(names)  # not one look-up per earlier node of a name


def test_each_condition_is_parsed_once(monkeypatch):
    made: list[str] = []
    real = kinds_work.SafeExpression

    def counting(text: str) -> object:
        made.append(text)
        return real(text)

    monkeypatch.setattr(kinds_work, "SafeExpression", counting)
    load_tree(groups_tree(10)).close()
    assert len(made) == 10 * 3  # three conditions a group, each parsed once for io, outcome, build


def test_an_ordinary_file_is_not_scanned_twice_and_a_bomb_still_is(monkeypatch):
    calls: list[str] = []
    real = positions.scan_limits

    def counting(text: str, file: str, limits: positions.YamlLimits):
        calls.append(file)
        return real(text, file, limits)

    monkeypatch.setattr(positions, "scan_limits", counting)
    assert validate_source(groups_tree(10)) == []
    assert calls == []
    levels = "abcdefg"  # each level ten uses of the one before: 10**7 values
    lines = ["a: &a [" + ", ".join(['"x"'] * 10) + "]"]
    for before, level in itertools.pairwise(levels):
        lines.append(f"{level}: &{level} [" + ", ".join([f"*{before}"] * 10) + "]")
    bomb = "\n".join(lines) + "\n"
    found = validate_source(bomb)
    assert calls == ["<string>"]
    assert [d.code for d in found] == ["yaml-limit"] and "alias *" in found[0].message


# -- what a loaded tree keeps ----------------------------------------------------------------


def _alive(kind: type) -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, kind))


def test_a_loaded_tree_keeps_no_load_time_data():
    before = (_alive(NodeRecord), _alive(Unit), _alive(positions.SourceMap))
    tree = load_tree(groups_tree(5))
    assert (_alive(NodeRecord), _alive(Unit), _alive(positions.SourceMap)) == before
    assert tree.model.root is None and tree.model.name == "big"
    assert len(tree.state_info.fields) > 5 and len(tree.nodes) == 46
    assert tree.run().ok
    tree.close()


def test_a_loaded_tree_holds_at_most_three_kib_a_node():
    text = groups_tree(111)  # 1,000 nodes
    load_tree(text).close()  # caches, first imports
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tree = load_tree(text)
        gc.collect()
        alive = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    tree.close()
    assert alive / 1000 <= 3072, alive / 1000  # over 5 KiB when the load's data was kept


# -- validation start-up ---------------------------------------------------------------------


def test_validating_imports_neither_networkx_nor_httpx_nor_the_tree(tmp_path: Path):
    tree = tmp_path / "t.yaml"
    tree.write_text(
        "state: {n: {type: integer, default: 1}}\n"
        "llm: {provider: scripted, replies: [done]}\n"
        "root: {sequence: {children: [{condition: {check: 'n > 0'}}, {agent: {goal: hi}}]}}\n"
    )
    code = (
        "import sys\n"
        "from jianmu_bt.loader import validate_source\n"
        f"assert validate_source({str(tree)!r}) == []\n"
        "heavy = ('networkx', 'httpx', 'jianmu_bt.loader.tree', 'jianmu_bt.loader.session')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_validating_a_tree_imports_neither_py_trees_nor_the_nodes():
    """`jianmu validate` checks everything before the build, so it never builds: py_trees, the
    node classes and the runner stay unloaded (the validation of a small tree starts faster)."""
    root = Path(__file__).resolve().parents[2]
    script = (
        "import sys; from pathlib import Path; from jianmu_bt.loader import validate_source; "
        f"found = validate_source(Path({str(root / 'trees' / 'quickstart.yaml')!r})); "
        "loaded = [m for m in ('py_trees', 'jianmu_bt.nodes', 'jianmu_bt.runtime.runner') "
        "if m in sys.modules]; print(len(found), loaded)"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.split() == ["0", "[]"], out.stdout + out.stderr


def test_an_agents_own_llm_config_is_checked_without_building(tmp_path):
    tree = tmp_path / "agent.yaml"
    tree.write_text(
        "version: 1\nroot:\n  agent:\n    goal: hi\n    llm: {provider: scripted}\n",
        encoding="utf-8",
    )
    found = [d for d in validate_source(tree) if d.severity == "error"]
    assert [d.code for d in found] == ["llm-config"], found
    assert (found[0].line, "replies" in found[0].message) == (5, True)


def test_a_process_first_file_builds_the_models_of_its_own_kinds_and_later_files_get_all(
    tmp_path: Path,
):
    """`jianmu validate` of one file builds the node models of the kinds that file uses, not of
    all 25; a later file with other kinds (or an unknown one) still validates as it would with
    every kind built, from then on. A fresh interpreter: this test process has built them all."""
    (tmp_path / "small.yaml").write_text(
        "version: 1\nstate: {k: {type: integer, default: 0}}\n"
        "root: {sequence: {children: [{set: {values: {k: 1}}}]}}\n",
        encoding="utf-8",
    )
    (tmp_path / "other.yaml").write_text(
        "version: 1\nstate: {k: {type: integer, default: 0}}\n"
        "root: {retry: {num_failures: 2, child: {condition: {check: 'k > 0'}}}}\n",
        encoding="utf-8",
    )
    (tmp_path / "typo.yaml").write_text(
        "version: 1\nroot: {sequence: {children: [{invertr: {child: {set: {values: {}}}}}]}}\n",
        encoding="utf-8",
    )
    script = (
        "import sys; from pathlib import Path; from jianmu_bt.loader import registry, "
        "validate_source\n"
        "first = validate_source(Path(sys.argv[1]) / 'small.yaml')\n"
        "print(len(first), sorted(registry.models(()).kinds))\n"
        "other = validate_source(Path(sys.argv[1]) / 'other.yaml')\n"
        "print(len(other), registry.models(()).kinds == set(registry.node_kinds()))\n"
        "print(*[d.message for d in validate_source(Path(sys.argv[1]) / 'typo.yaml')])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    first, other, typo = out.stdout.splitlines()
    # and `behaviour`, the kind of the placeholder a refused node becomes
    assert first == "0 ['behaviour', 'sequence', 'set']", out.stdout + out.stderr
    assert other == "0 True", out.stdout + out.stderr
    assert "unknown node kind 'invertr' (did you mean 'inverter'?)" in typo, typo

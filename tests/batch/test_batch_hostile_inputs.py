"""Input lines a batch cannot take are each that line's error, never the batch's: a line nested
50,000 deep, NaN and Infinity, a key given twice, a line longer than the cap. Before, the deep
line aborted the whole batch ("internal error: RecursionError") before any run."""

from __future__ import annotations

import pytest
from batch_helpers import batch, calls, results, write_tree

from jianmu_bt.batch import inputs as batch_inputs
from jianmu_bt.batch.inputs import MAX_DEPTH, parse_line


def test_hostile_lines_are_refused_one_by_one_and_the_others_run(tmp_path, monkeypatch):
    monkeypatch.setattr(batch_inputs, "MAX_LINE_BYTES", 200_000)
    tree = write_tree(tmp_path)
    lines = [
        b'{"x": 1}',
        b'{"x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
        b'{"x": NaN}',
        b'{"x": 2, "x": 3}',
        b'{"x": 4, "pad": "' + b"p" * 300_000 + b'"}',
        b'{"x": 5}',
    ]
    source = tmp_path / "inputs.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "results.jsonl"

    code, err = batch(tree, source, "--out", out, "--store", tmp_path / "runs.db")

    assert code == 1, err
    found = results(out)
    statuses = [found[line]["status"] for line in range(1, 7)]
    assert statuses == ["succeeded", "invalid", "invalid", "invalid", "invalid", "succeeded"]
    assert found[2]["error"] == f"nested more than {MAX_DEPTH} levels deep"
    assert found[3]["error"] == "NaN is not a JSON number; write a number or null"
    assert found[4]["error"] == "the key 'x' is given twice in one object"
    assert found[5]["error"] == "longer than 200000 bytes"
    assert "internal error" not in err
    assert calls(tmp_path) == {1: 1, 5: 1}


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (b'{"x": Infinity}', "Infinity is not a JSON number"),
        (b'{"x": -Infinity}', "-Infinity is not a JSON number"),
        (b'{"a": {"b": 1, "b": 2}}', "the key 'b' is given twice"),
        (b"[" * 65 + b"]" * 65, "nested more than 64 levels deep"),
        (b'{"x": 1', "not JSON"),
    ],
)
def test_each_parse_failure_says_what(line, problem):
    value, error = parse_line(line)
    assert value is None and error.startswith(problem)


def test_nesting_up_to_the_cap_is_taken():
    value, error = parse_line(b"[" * 64 + b"]" * 64)
    assert error == "" and isinstance(value, list)

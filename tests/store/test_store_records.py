"""Records, digests and errors of the run store (no database needed)."""

import dataclasses
import hashlib
import json
import pickle

import pytest
from store_helpers import entry, make_run

import jianmu_bt.store as store_package
from jianmu_bt.store import (
    CALL_STATUSES,
    FINISHED,
    RUN_STATUSES,
    Checkpoint,
    CheckpointNotFoundError,
    LeaseError,
    StoreFormatError,
    digest_arguments,
)


def test_statuses():
    assert RUN_STATUSES == ("running", "paused", "succeeded", "failed")
    assert FINISHED == ("succeeded", "failed")
    assert CALL_STATUSES == (
        "held",
        "approved",
        "running",
        "done",
        "failed",
        "denied",
        "skipped",
        "in_doubt",
        "cancelled",
        "waiting",
    )


def test_digest_is_canonical_json_sha256_prefix():
    arguments = {"b": [1, {"y": 2, "x": 1}], "a": "建木"}
    canonical = json.dumps(
        ["write", arguments], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    expected = hashlib.sha256(canonical.encode()).hexdigest()[:32]
    assert digest_arguments("write", arguments) == expected
    assert digest_arguments("write", {"a": "建木", "b": [1, {"x": 1, "y": 2}]}) == expected
    assert digest_arguments("read", arguments) != expected
    assert len(expected) == 32
    # typed values have digests of their own, equal for equal values (a set in any order)
    assert digest_arguments("t", {"s": {1}}) != digest_arguments("t", {"s": "{1}"})
    assert digest_arguments("t", {"s": {"b", "a", "c"}}) == digest_arguments(
        "t", {"s": {"c", "a", "b"}}
    )


def test_records_are_frozen_with_slots_and_defaults():
    run = make_run("r1")
    assert run.inputs == {} and run.parent_run is None and run.lease_owner is None
    assert make_run("r2").inputs is not run.inputs
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.status = "failed"  # type: ignore[misc]
    row = entry("k")
    assert (row.position, row.created, row.result, row.effectful) == (0, 0.0, None, False)
    assert not hasattr(row, "__dict__")
    cp = Checkpoint("r1", 1, 0.0, 0, {})
    assert not hasattr(cp, "__dict__")


def test_errors_pickle_with_their_details():
    lease = pickle.loads(pickle.dumps(LeaseError("held", holder="w", expires=5.0)))
    assert (str(lease), lease.holder, lease.expires) == ("held", "w", 5.0)
    fmt = pickle.loads(pickle.dumps(StoreFormatError("newer", found=2, supported=1)))
    assert (fmt.found, fmt.supported) == (2, 1)
    missing = CheckpointNotFoundError("no checkpoint 3")
    assert str(missing) == "no checkpoint 3"
    assert isinstance(missing, KeyError)


def test_store_package_imports_nothing_else_from_jianmu_bt():
    import ast
    from pathlib import Path

    folder = Path(store_package.__file__).parent
    for path in folder.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                if name.startswith("jianmu_bt"):
                    # `jianmu_bt._lazy` (the lazy package facade) imports nothing of the project.
                    allowed = name.startswith("jianmu_bt.store") or name == "jianmu_bt._lazy"
                    assert allowed, f"{path.name} imports {name}"
                assert name.split(".")[0] != "psycopg" or path.name == "postgres.py"
        assert len(path.read_text().splitlines()) < 400, path.name

"""Node ids are version-4 UUIDs like py_trees' own, unique, and not shared with a forked child."""

from __future__ import annotations

import copy
import os
import pickle
import random
import sys
import uuid

import pytest

from jianmu_bt.nodes import Condition
from jianmu_bt.runtime.node_ids import node_id


def test_a_node_id_is_an_ordinary_version_4_uuid() -> None:
    made = node_id()
    assert type(made) is uuid.UUID
    assert made.version == 4 and made.variant == uuid.RFC_4122
    again = uuid.UUID(str(made))
    assert again == made and hash(again) == hash(made) and again.int == made.int
    assert pickle.loads(pickle.dumps(made)) == made and copy.deepcopy(made) == made
    assert made.is_safe is uuid.SafeUUID.unknown
    with pytest.raises(TypeError):
        made.int = 1  # type: ignore[misc]  # read-only, as every UUID


def test_node_ids_are_unique_and_use_every_random_bit() -> None:
    ids = [node_id() for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
    fixed = (0xF << 76) | (0x3 << 62)
    varied = 0
    for made in ids:
        varied |= made.int ^ ids[0].int
    assert varied == ((1 << 128) - 1) ^ fixed  # all 122 random bits vary, the six fixed never


def test_node_ids_do_not_follow_the_shared_random_module() -> None:
    random.seed(7)
    first = node_id()
    random.seed(7)
    assert node_id() != first


def test_our_nodes_get_node_ids() -> None:
    a, b = Condition("a", "x == 1"), Condition("b", "x == 1")
    assert isinstance(a.id, uuid.UUID) and a.id.version == 4 and a.id != b.id


@pytest.mark.skipif(sys.platform == "win32", reason="fork is POSIX")
def test_a_forked_child_draws_other_ids_than_its_parent() -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next id, then leave without running pytest's exit
        try:
            os.write(write, node_id().bytes)
        finally:
            os._exit(0)
    os.close(write)
    mine = node_id()
    with os.fdopen(read, "rb") as pipe:
        theirs = uuid.UUID(bytes=pipe.read())
    os.waitpid(pid, 0)
    assert theirs != mine

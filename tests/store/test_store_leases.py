"""Conformance: leases (acquire, steal, expiry, renew, release), fencing and process races."""

import json
import subprocess
import sys
import time

import pytest
from store_helpers import entry, make_run, snapshot

from jianmu_bt.store import LeaseError, LeaseLostError, RunNotFoundError


def test_acquire_free_lease_and_again_by_the_same_owner(store):
    store.create_run(make_run("r1"))
    taken = store.acquire_lease("r1", "a", 60)
    assert taken.lease_owner == "a" and taken.lease_expires > time.time()
    assert store.get_run("r1") == taken
    again = store.acquire_lease("r1", "a", 120)
    assert again.lease_owner == "a" and again.lease_expires > taken.lease_expires


def test_acquire_held_lease_names_holder_and_expiry(store):
    store.create_run(make_run("r1"), owner="worker-1", lease_seconds=60)
    with pytest.raises(LeaseError) as caught:
        store.acquire_lease("r1", "worker-2")
    error = caught.value
    assert error.holder == "worker-1"
    assert error.expires == store.get_run("r1").lease_expires
    message = str(error)
    assert "'worker-1'" in message and "until" in message and store.location in message
    assert "Z (in " in message
    assert store.get_run("r1").lease_owner == "worker-1"


def test_steal_from_exactly_the_named_holder(store):
    store.create_run(make_run("r1"), owner="old", lease_seconds=60)
    with pytest.raises(LeaseError):
        store.acquire_lease("r1", "new", steal_from="someone-else")
    assert store.acquire_lease("r1", "new", steal_from="old").lease_owner == "new"
    with pytest.raises(LeaseError):
        store.acquire_lease("r1", "third", steal_from="old")


def test_expired_lease_can_be_taken(store):
    store.create_run(make_run("r1"))
    store.acquire_lease("r1", "a", seconds=-1)  # already expired
    assert store.acquire_lease("r1", "b", 60).lease_owner == "b"
    store.acquire_lease("r1", "b", seconds=0.05)
    time.sleep(0.1)
    assert store.acquire_lease("r1", "c", 60).lease_owner == "c"


def test_lease_on_missing_run(store):
    with pytest.raises(RunNotFoundError):
        store.acquire_lease("ghost", "a")
    with pytest.raises(RunNotFoundError):
        store.renew_lease("ghost", "a")
    store.release_lease("ghost", "a")  # nothing to release: no error


def test_renew(store):
    store.create_run(make_run("r1"), owner="a", lease_seconds=10)
    first = store.get_run("r1").lease_expires
    assert store.renew_lease("r1", "a", 100).lease_expires > first
    with pytest.raises(
        LeaseLostError, match=r"'b' does not hold the lease.*'a' holds it"
    ) as caught:
        store.renew_lease("r1", "b")
    assert caught.value.holder == "a"
    # Expired but nobody took it: still ours to renew.
    store.acquire_lease("r1", "a", seconds=-1)
    assert store.renew_lease("r1", "a", 60).lease_owner == "a"
    # Expired and taken by another: lost.
    store.acquire_lease("r1", "a", seconds=-1)
    store.acquire_lease("r1", "b", 60)
    with pytest.raises(LeaseLostError):
        store.renew_lease("r1", "a")
    store.release_lease("r1", "b")
    with pytest.raises(LeaseLostError, match="nobody holds it"):
        store.renew_lease("r1", "b")


def test_release(store):
    store.create_run(make_run("r1"), owner="a", lease_seconds=60)
    store.release_lease("r1", "b")  # not ours: nothing happens
    assert store.get_run("r1").lease_owner == "a"
    store.release_lease("r1", "a")
    run = store.get_run("r1")
    assert (run.lease_owner, run.lease_expires) == (None, None)
    assert store.acquire_lease("r1", "b").lease_owner == "b"


def test_append_by_the_holder(store):
    store.create_run(make_run("r1"), owner="a", lease_seconds=60)
    assert store.append("r1", "a", [entry("x")], {"v": 1}, status="paused") == 1
    assert store.get_run("r1").status == "paused"


def test_append_releasing_the_lease_in_the_same_write(store):
    store.create_run(make_run("r1"), checkpoint={"v": 0}, owner="a", lease_seconds=60)
    store.append("r1", "a", [entry("x")], {"v": 1})
    assert store.get_run("r1").lease_owner == "a"  # a plain append keeps the lease
    assert store.append("r1", "a", [entry("x", "done")], {"v": 2}, "succeeded", release=True) == 2
    run = store.get_run("r1")
    assert (run.status, run.lease_owner, run.lease_expires) == ("succeeded", None, None)
    assert [c.data for c in store.history("r1")] == [{"v": 0}, {"v": 1}, {"v": 2}]
    assert store.acquire_lease("r1", "b").lease_owner == "b"
    store.acquire_lease("r1", "b", seconds=-1)
    before = snapshot(store, "r1")
    with pytest.raises(LeaseLostError):  # fenced as any append: nothing written, nothing freed
        store.append("r1", "a", status="failed", release=True)
    assert snapshot(store, "r1") == before


def test_fencing_a_writer_whose_lease_was_taken(store):
    store.create_run(make_run("r1"), checkpoint={"v": 0}, owner="a", lease_seconds=60)
    store.append("r1", "a", [entry("x")], {"v": 1})
    store.acquire_lease("r1", "a", seconds=-1)  # a stalls: its lease expires...
    store.acquire_lease("r1", "b", 60)  # ...and b takes over
    before = snapshot(store, "r1")
    with pytest.raises(
        LeaseLostError, match=r"'a' does not hold the lease.*'b' holds it"
    ) as caught:
        store.append("r1", "a", [entry("y")], {"v": 2}, status="failed")
    assert caught.value.holder == "b"
    assert snapshot(store, "r1") == before
    assert store.append("r1", "b", [entry("y")]) == 2


def test_fencing_an_expired_lease_and_no_lease(store):
    store.create_run(make_run("r1"))
    with pytest.raises(LeaseLostError, match="nobody holds it"):
        store.append("r1", "a", [entry("x")])
    store.acquire_lease("r1", "a", seconds=-1)
    with pytest.raises(LeaseLostError, match="expired"):
        store.append("r1", "a", [entry("x")])
    assert store.journal_log("r1") == []


def test_append_without_owner_refused_while_someone_holds_the_lease(store):
    store.create_run(make_run("r1"), checkpoint={"v": 0})
    assert store.append("r1", None, [entry("decision", "approved")]) == 1  # nobody holds it
    store.acquire_lease("r1", "a", 60)
    before = snapshot(store, "r1")
    with pytest.raises(LeaseError, match="leased by 'a'"):
        store.append("r1", None, [entry("decision", "denied")], {"v": 1})
    assert snapshot(store, "r1") == before
    store.acquire_lease("r1", "a", seconds=-1)  # expired: decisions may be written again
    assert store.append("r1", None, [entry("decision", "denied")]) == 2


RACER = r"""
import json, os, sys, time
from jianmu_bt.store import LeaseError, open_store
location, owner, go, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
store = open_store(location)
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.001)
won = []
shift = int(owner.rsplit("-", 1)[1])
for i in [(k + shift) % count for k in range(count)]:
    try:
        store.acquire_lease(f"race-{i}", owner, 60)
        won.append(i)
    except LeaseError:
        pass
store.close()
print(json.dumps(won), flush=True)
"""


def test_processes_racing_for_leases_exactly_one_wins_each(store, location, tmp_path):
    count, racers = 12, 4
    for i in range(count):
        store.create_run(make_run(f"race-{i}"))
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, location, f"racer-{n}", str(go), str(count)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(racers)
    ]
    try:
        for proc in procs:
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        go.touch()
        results = {}
        for n, proc in enumerate(procs):
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err
            results[f"racer-{n}"] = json.loads(out)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    for i in range(count):
        winners = [owner for owner, won in results.items() if i in won]
        assert len(winners) == 1, (i, results)
        assert store.get_run(f"race-{i}").lease_owner == winners[0]


def test_fencing_tokens_rise_with_every_taking_and_fence_writes(store):
    created = store.create_run(make_run("r1"), owner="a", lease_seconds=60)
    assert created.lease_token == 1 and store.get_run("r1").lease_token == 1
    store.append("r1", "a", [entry("x")], fence=1)
    assert store.renew_lease("r1", "a", 60, fence=1).lease_token == 1  # renewing keeps it
    store.release_lease("r1", "a")
    again = store.acquire_lease("r1", "a", 60)  # the same owner name, taken again
    assert again.lease_token == 2
    before = snapshot(store, "r1")
    with pytest.raises(LeaseLostError):  # a write fenced by the first taking is refused
        store.append("r1", "a", [entry("y")], fence=1)
    with pytest.raises(LeaseLostError):
        store.renew_lease("r1", "a", 60, fence=1)
    assert snapshot(store, "r1") == before
    assert store.append("r1", "a", [entry("y")], fence=2) == 2
    assert store.acquire_lease("r1", "b", 60, steal_from="a").lease_token == 3


def test_a_fenced_writer_late_to_renew_keeps_writing_until_someone_takes_the_run(store):
    store.create_run(make_run("r1"), owner="a", lease_seconds=-1)  # expired at once
    assert store.append("r1", "a", [entry("x")], fence=1) == 1  # nobody took it: still a's
    with pytest.raises(LeaseLostError):  # unfenced, an expired lease is not enough
        store.append("r1", "a", [entry("y")])
    store.acquire_lease("r1", "b", 60)
    with pytest.raises(LeaseLostError):
        store.append("r1", "a", [entry("y")], fence=1)

"""Leases of durable runs: who holds a run, when a holder is dead, and the heartbeat.

A process that drives a run holds its lease in the run store and renews it every heartbeat from a
thread of its own (a busy event loop does not starve it). The lease lasts two heartbeats on the
store's clock, so a run whose holder died is free to take within two heartbeats of its last one.
A holder is dead when its lease has expired — never because a pid looks free — except on the one
path that is provably right: a holder of this process that has ended, or a process of the same
boot and PID namespace whose pid is gone or now belongs to a process started at another time.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_HEARTBEAT",
    "HEARTBEAT_VARIABLE",
    "Heartbeat",
    "heartbeat_seconds",
    "mark_ended",
    "mark_live",
    "new_lease_owner",
    "owner_is_dead",
]

DEFAULT_HEARTBEAT = 3.0
"""Seconds between a holder's lease renewals; the lease lasts two of them."""

HEARTBEAT_VARIABLE = "JIANMU_HEARTBEAT"
"""The environment variable that sets the heartbeat in seconds (a number > 0)."""

# The owners this process holds right now: an owner of this pid missing here has ended.
_LIVE: set[str] = set()
_LIVE_LOCK = threading.Lock()


def heartbeat_seconds() -> float:
    """`$JIANMU_HEARTBEAT` seconds when set to a number > 0, else DEFAULT_HEARTBEAT."""
    text = os.environ.get(HEARTBEAT_VARIABLE, "").strip()
    try:
        value = float(text) if text else DEFAULT_HEARTBEAT
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ValueError(f"{HEARTBEAT_VARIABLE}={text!r}: give a number of seconds > 0")
    return value


def _read(path: str) -> str:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return ""


def _start_time(pid: int) -> str:
    """When process `pid` started (clock ticks since boot), "" when there is no such process."""
    stat = _read(f"/proc/{pid}/stat")
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else ""


def _namespace() -> str:
    """This process's boot and PID namespace (`boot-id/pid-ns-inode`), "" off Linux."""
    boot = _read("/proc/sys/kernel/random/boot_id").replace("-", "")
    try:
        pid_ns = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return ""
    return f"{boot[:16]}/{pid_ns}" if boot else ""


def new_lease_owner() -> str:
    """A lease owner name for one run in this process: `host:pid:nonce@boot/pidns/start` (the
    part after `@` proves which process it is, where /proc tells)."""
    pid = os.getpid()
    where = _namespace()
    proof = f"@{where}/{_start_time(pid)}" if where else ""
    return f"{socket.gethostname()}:{pid}:{uuid.uuid4().hex[:8]}{proof}"


def owner_is_dead(owner: str | None) -> bool:
    """True only when `owner` (from `new_lease_owner`) provably holds nothing any more: a holder
    of this process that has ended, or one of the same boot and PID namespace whose process is
    gone (its pid unused, or used by a process started at another time). Anything else (another
    host, a container, an old-style name) is alive until its lease expires."""
    if not owner:
        return False
    name, _, proof = owner.partition("@")
    parts = name.split(":")
    if len(parts) != 3 or not parts[1].isdigit() or not proof:
        return False
    where, _, started = proof.rpartition("/")
    if where != _namespace() or not started:
        return False
    pid = int(parts[1])
    if pid == os.getpid():
        with _LIVE_LOCK:
            return owner not in _LIVE
    return _start_time(pid) != started


def mark_live(owner: str) -> None:
    """`owner` holds (or is about to take) a lease in this process: it is not dead."""
    with _LIVE_LOCK:
        _LIVE.add(owner)


def mark_ended(owner: str) -> None:
    """`owner` of this process holds nothing any more (`owner_is_dead` says so at once)."""
    with _LIVE_LOCK:
        _LIVE.discard(owner)


class Heartbeat:
    """Renews a run's lease every `interval` seconds from a thread, while the run lives.

    `renew()` does one renewal and says whether the run may go on (it stops the run itself when
    not). Use as a context manager around the run: the thread starts on entry and is stopped and
    joined on exit.
    """

    def __init__(self, owner: str, interval: float, renew: Callable[[], bool]) -> None:
        self.owner = owner
        self.interval = interval
        self._renew = renew
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Heartbeat:
        self._thread = threading.Thread(
            target=self._beat, name=f"jianmu-lease-{self.owner[:24]}", daemon=True
        )
        self._thread.start()
        return self

    def _beat(self) -> None:
        while not self._halt.wait(self.interval):
            try:
                if not self._renew():
                    return
            except Exception:  # never let the thread die silently
                logger.exception("renewing the lease of %s failed", self.owner)

    def __exit__(self, *exc_info: object) -> None:
        self._halt.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

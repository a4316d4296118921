"""ProcessGroup: end a stdio MCP server together with every process it started.

A stdio server is started in a new session (`start_new_session=True`), so it leads a process
group of its own and everything it spawns (`sh -c 'helper & exec server'`, a Python server's
`subprocess.Popen`) is in that group unless it leaves on purpose (`setsid`, a daemonizer).
Ending the server ends the group: SIGTERM to the whole group, a grace period, then SIGKILL. This
is done even when the server itself already exited, because its children outlive it otherwise.

The waits poll without blocking the event loop; the /proc scan that tells live members from
zombies (orphans whose reaper has not run yet) runs in a worker thread.
"""

from __future__ import annotations

import os
import signal
import sys

import anyio
import anyio.to_thread

#: Seconds between SIGTERM and SIGKILL.
DEFAULT_TERM_GRACE = 2.0
#: Seconds allowed for SIGKILLed members to disappear before giving up on them.
KILL_WAIT = 2.0
#: How often the group is probed while waiting.
POLL_INTERVAL = 0.02

_PROC = "/proc"


def live_members(pgid: int) -> list[int] | None:
    """Pids of the group's members that are not zombies, from /proc; None without /proc."""
    try:
        if os.readlink(f"{_PROC}/self") != str(os.getpid()):
            return None  # a /proc of another pid namespace: its pids are not ours
    except OSError:
        return None
    members = []
    for entry in os.listdir(_PROC):
        if not entry.isdigit():
            continue
        try:
            with open(f"{_PROC}/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile, or not readable
        # fields: state, ppid, pgrp, ...
        if len(fields) > 2 and fields[0] != b"Z" and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def signal_group(pgid: int, signum: int) -> bool:
    """Send `signum` to the group; False when the group no longer exists."""
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # some members cannot be signalled (another user): not proof of absence
    return True


class ProcessGroup:
    """The process group a stdio server leads (its pgid is the server's pid).

    `terminate()` ends it (SIGTERM, `term_grace` seconds, SIGKILL) and may be called from
    several tasks: later callers wait for the first. `kill_now()` is the synchronous last resort
    for paths that cannot await. Once the group is gone (ESRCH), or `terminate` ran to its end,
    it is never signalled again, so a recycled pid cannot be hit.
    """

    def __init__(self, pgid: int, *, term_grace: float = DEFAULT_TERM_GRACE) -> None:
        self.pgid = pgid
        self.term_grace = term_grace
        #: True once signalling the group failed with ESRCH: it no longer exists.
        self.gone = False
        #: True once `terminate` ran to its end (nothing is signalled after that).
        self.ended = False
        self._ending: anyio.Event | None = None

    async def live(self) -> bool:
        """Whether a member other than a zombie is left (probing without blocking the loop)."""
        if self.gone:
            return False
        if not signal_group(self.pgid, 0):
            self.gone = True
            return False
        members = await anyio.to_thread.run_sync(live_members, self.pgid)
        return members is None or bool(members)

    async def _wait_dead(self, seconds: float) -> bool:
        with anyio.move_on_after(seconds):
            while await self.live():
                await anyio.sleep(POLL_INTERVAL)
            return True
        return False

    async def terminate(self, grace: float | None = None) -> None:
        """SIGTERM the group, wait up to `grace` (default `term_grace`) seconds, SIGKILL what
        is left.

        Shielded from cancellation and bounded in time (about `term_grace` + KILL_WAIT seconds
        at most), so a cancelled caller can neither leak the group nor hang on it.
        """
        if self.ended or self.gone:
            return
        grace = self.term_grace if grace is None else grace
        if self._ending is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(self.term_grace + KILL_WAIT):
                await self._ending.wait()
            return
        self._ending = anyio.Event()
        try:
            with anyio.CancelScope(shield=True):
                if not signal_group(self.pgid, signal.SIGTERM):
                    self.gone = True
                    return
                dead = await self._wait_dead(grace)
                # Zombies only (or nothing) left when `dead`: a SIGKILL costs nothing then, and
                # covers a /proc that could not tell.
                if not self.gone and not signal_group(self.pgid, signal.SIGKILL):
                    self.gone = True
                if not dead:
                    await self._wait_dead(KILL_WAIT)
            self.ended = True
        finally:
            self._ending.set()

    def kill_now(self) -> None:
        """SIGKILL whatever is left of the group, synchronously: the last resort when
        `terminate` could not run to its end (no-op once it did, or once the group is gone)."""
        if not self.ended and not self.gone and not signal_group(self.pgid, signal.SIGKILL):
            self.gone = True

    def __repr__(self) -> str:
        return f"<ProcessGroup {self.pgid}{' gone' if self.gone else ''}>"


def supported() -> bool:
    """Whether servers can be put in a process group of their own here (POSIX)."""
    return sys.platform != "win32" and hasattr(os, "killpg")


__all__ = [
    "DEFAULT_TERM_GRACE",
    "ProcessGroup",
    "live_members",
    "signal_group",
    "supported",
]

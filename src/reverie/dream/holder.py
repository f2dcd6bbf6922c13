"""Who holds a dream's lock, and whether it still lives: the holder's process as its lease records it, the
judgement that a holder is dead, and the heartbeat a running dream beats from a thread of its own.

A lease runs ``lease_seconds`` (600 s by default) past a dream's last checkpoint, so a holder that died would
hold the agent's lock that long. Its lease also names its process (pid, host, heartbeat period) and carries a
heartbeat, renewed every ``heartbeat_seconds`` by ``Heartbeat`` (a thread, so a long LLM call never stops it),
and ``dead_reason`` tells a dead holder from a live one at once.

Invariants:
- The store's own word comes first: on PostgreSQL the advisory lock lives exactly as long as the holder's
  session, so a free lock means dead and a held one alive (a hung holder is alive: it can still be asked to
  abort, and nobody else may run). Then, where the store cannot tell (SQLite): an expired lease is dead (the
  lease's old rule); a holder on this host whose pid no longer exists (or is a zombie) is dead at once; a
  holder in this very process is alive exactly while its run is registered here (``running_here``); any
  holder whose heartbeat is older than three periods plus ``HEARTBEAT_SLACK_SECONDS`` is dead (another host,
  or a pid reused by another process). A lease that names no process (taken by an older version) is ended by
  its expiry only.
- Staleness is judged on the caller's Clock (``now``); ``Heartbeat`` beats on the same Clock and waits in real
  seconds.
- One heartbeat thread per service, for the service's life (one store connection, not one per run); a beat
  that fails is logged and retried at the next period; ``stop`` ends the thread.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

from reverie.storage.base import DreamLockState
from reverie.types.dream import DreamProcess

log = logging.getLogger("reverie.dream")
HEARTBEAT_SLACK_SECONDS = 10.0  # past three missed heartbeats: a busy store or a paused machine is not death
_here: set[str] = set()  # the holders (run ids) whose dream runs in this process
_here_lock = threading.Lock()


def this_process(heartbeat_seconds: float) -> DreamProcess:
    """The process a lease taken now names."""
    return DreamProcess(pid=os.getpid(), host=socket.gethostname(), heartbeat_seconds=heartbeat_seconds)


def running_here(holder: str, running: bool) -> None:
    """Register (``running``) or forget a holder whose dream runs in this process."""
    with _here_lock:
        if running:
            _here.add(holder)
        else:
            _here.discard(holder)


def describe(state: DreamLockState) -> str:
    """The holder as a person reads it: ``process 123 on host-a``, or its run id when it named no process."""
    if state.process is None:
        return f"the holder {state.holder}"
    return f"process {state.process.pid} on {state.process.host}"


def dead_reason(state: DreamLockState, gone: bool | None, now: datetime) -> str | None:
    """Why the holder of ``state`` (held: ``state.holder`` set) counts as dead at ``now``, or None while it may
    live. ``gone`` is the store's own word (``DreamRepository.holder_gone``)."""
    who = describe(state)
    if gone is not None:
        return f"{who} is gone (its database session ended)" if gone else None
    if state.expires_at is None or state.expires_at <= now:
        return f"the lease of {who} ran out"
    process = state.process
    if process is None:
        return None
    if process.host == socket.gethostname():
        if process.pid == os.getpid():
            with _here_lock:
                return None if state.holder in _here else f"{who} no longer runs this dream"
        if not pid_alive(process.pid):
            return f"{who} is gone"
    stale_after = timedelta(seconds=3 * process.heartbeat_seconds + HEARTBEAT_SLACK_SECONDS)
    beat = state.heartbeat_at
    if beat is not None and now - beat > stale_after:
        return f"{who} sent no heartbeat since {beat.isoformat(timespec='seconds')}"
    return None


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this host (True when it cannot tell: the heartbeat decides)."""
    if pid <= 0:
        return False
    if sys.platform == "win32":  # os.kill there terminates; no cheap probe: leave it to the heartbeat
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: another user's process, alive
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """A killed process its parent has not reaped yet still answers ``kill(pid, 0)``; Linux's /proc says Z."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


class Heartbeat:
    """Beats every lease registered with ``hold`` every ``seconds``, from one daemon thread started on the
    first ``hold``; ``beat(agent_id, holder)`` writes one heartbeat."""

    def __init__(self, beat: Callable[[str, str], object], seconds: float) -> None:
        if not seconds > 0:
            raise ValueError(f"heartbeat seconds must be positive, got {seconds!r}")
        self._beat = beat
        self._seconds = seconds
        self._leases: set[tuple[str, str]] = set()
        self._cond = threading.Condition()
        self._closing = False
        self._thread: threading.Thread | None = None

    def hold(self, agent_id: str, holder: str) -> None:
        with self._cond:
            self._leases.add((agent_id, holder))
            if self._thread is None:
                self._closing = False
                self._thread = threading.Thread(target=self._loop, name="reverie-dream-heartbeat", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def drop(self, agent_id: str, holder: str) -> None:
        with self._cond:
            self._leases.discard((agent_id, holder))

    def stop(self, timeout: float = 30.0) -> None:
        """End the thread (a later ``hold`` starts another)."""
        with self._cond:
            thread, self._closing = self._thread, True
            self._cond.notify_all()
        if thread is not None:
            thread.join(timeout)
        with self._cond:
            if self._thread is thread and (thread is None or not thread.is_alive()):
                self._thread = None

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._closing or bool(self._leases))
                if self._closing:
                    return
                leases = sorted(self._leases)
            for agent_id, holder in leases:
                try:
                    self._beat(agent_id, holder)
                except Exception as exc:  # the next period tries again; a dream is not stopped by a missed beat
                    log.warning("DreamService: heartbeat of the dream of %s failed: %s", agent_id, exc)
            with self._cond:
                self._cond.wait_for(lambda: self._closing, timeout=self._seconds)

"""The conversation log as the dream's learning passes read it (memory mining, episode extraction, preference
inference), pure: records to turns, the read window, the prompt budget and the transcript text.

Invariants:
- A record that is not a turn (no string content) is skipped, never fatal: the log is best-effort telemetry.
- The window is by the turn's own time: ``newer_than(turns, since)`` keeps turns strictly after ``since``; a
  turn whose time cannot be read is new only while nothing was read yet (``since`` None), so an unreadable
  record is never mined twice.
- ``fit`` keeps whole turns in time order and never splits one; what does not fit waits for the next cycle
  (``oldest`` first) or is dropped (``newest`` first, for a pass that clears the log anyway).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of the conversation log."""

    session_id: str
    role: str
    content: str
    at: datetime | None
    key: str  # the record's canonical JSON: which log line it was (removal matches it exactly)


def record_key(record: Mapping[str, Any]) -> str:
    """A record's canonical JSON (sorted keys), the identity ``SessionJsonlLog.remove`` matches."""
    return json.dumps(dict(record), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def turns(records: Iterable[tuple[str, Mapping[str, Any]]]) -> list[Turn]:
    """The turns among ``(session_id, record)`` pairs, in the order given."""
    found: list[Turn] = []
    for session_id, record in records:
        content = record.get("content")
        if not isinstance(content, str) or not content.strip():
            continue
        role = record.get("role")
        found.append(
            Turn(
                session_id, role if isinstance(role, str) else "?", content, _time(record.get("at")), record_key(record)
            )
        )
    return found


def newer_than(items: Sequence[Turn], since: datetime | None) -> list[Turn]:
    """The turns after ``since`` (all when None), in time order (a turn without a time last)."""
    kept = list(items) if since is None else [t for t in items if t.at is not None and t.at > since]
    return sorted(kept, key=lambda t: (t.at is None, t.at.timestamp() if t.at is not None else 0.0))


def fit(items: Sequence[Turn], max_chars: int, *, max_turn_chars: int, newest: bool = False) -> list[Turn]:
    """Whole turns (each counted as shown, cut to ``max_turn_chars``) up to ``max_chars`` in all, from the
    oldest (or the ``newest``) on; the result is in the input's order. At least one turn when there is any."""
    order = list(reversed(items)) if newest else list(items)
    kept: list[Turn] = []
    used = 0
    for turn in order:
        size = min(len(turn.content), max_turn_chars) + len(turn.role) + 4
        if kept and used + size > max_chars:
            break
        kept.append(turn)
        used += size
    return list(reversed(kept)) if newest else kept


def by_session(items: Sequence[Turn]) -> dict[str, list[Turn]]:
    """The turns grouped by session, sessions in order of their first turn."""
    groups: dict[str, list[Turn]] = {}
    for turn in items:
        groups.setdefault(turn.session_id, []).append(turn)
    return groups


def newest(items: Sequence[Turn]) -> datetime | None:
    """The latest time among the turns, or None."""
    times = [t.at for t in items if t.at is not None]
    return max(times) if times else None


def render(items: Sequence[Turn], *, max_turn_chars: int) -> str:
    """``## Session <id> (n turns)`` then ``[time] role: text`` per turn (cut to ``max_turn_chars``)."""
    blocks = []
    for session_id, group in by_session(items).items():
        lines = [f"## Session {session_id} ({len(group)} turns)"]
        for turn in group:
            text = turn.content if len(turn.content) <= max_turn_chars else turn.content[:max_turn_chars] + " …"
            when = turn.at.isoformat(timespec="minutes") if turn.at is not None else "?"
            lines.append(f"[{when}] {turn.role}: {' '.join(text.split())}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)

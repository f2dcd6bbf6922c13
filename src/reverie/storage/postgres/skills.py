"""Skills, the skill-usage log and the feedback log on PostgreSQL: ``skills``, ``skill_versions``,
``skill_usage``, ``feedback`` (``storage.skills``).

Invariants:
- Every query names the agent: one agent never reads or changes another's skills, usage or feedback.
- Every write is one ``PgDatabase.write`` transaction (joining the caller's ``Store.transaction()``). A put
  locks the name's row (``FOR UPDATE``) before it compares versions, and a new name goes in with
  ``ON CONFLICT DO NOTHING`` (then the row is locked and compared), so two writers of one name serialise and
  never error: the second sees the first's version. A skill's row and its version row commit together.
- Names order and compare by code point (the columns are ``COLLATE "C"``, as SQLite's BINARY); a prefix
  matches by characters (``starts_with``), never by ``LIKE``.
- JSON is jsonb encoded with SQLite's rules (``skills_codec``); a vector is pgvector's ``vector``, read back
  as the same float32 bytes. The hidden ``seq`` columns are insertion order: the tie-break of "newest first".
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np

from reverie.errors import Conflict
from reverie.storage.postgres.database import Conn, PgDatabase
from reverie.storage.skills_codec import cas_refusal, decoded_list, encode, encode_feedback
from reverie.types import CoUsage, Feedback, Skill, SkillUsage, SkillVersion

_SKILL_COLUMNS = (
    "agent_id, name, summary, content, see_also, metadata, created_at, updated_at, last_used_at, archived_at,"
    " version, vector, vector_model"
)
_VERSION_COLUMNS = "agent_id, name, version, change, recorded_at, summary, content, see_also, metadata, archived"
_USAGE_COLUMNS = "agent_id, session_id, name, used_at"
_FEEDBACK_COLUMNS = "feedback_id, agent_id, session_id, kind, rating, comment, entry_ids, skill_names, created_at"
_LIVE_SKILL = (
    "EXISTS (SELECT 1 FROM skills s WHERE s.agent_id = u.agent_id AND s.name = u.name AND s.archived_at IS NULL)"
)


def _blob(value: Any) -> bytes | None:
    """float32 bytes of a vector read back (pgvector ``Vector`` or a numpy array), or None."""
    if value is None:
        return None
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32).tobytes()


def _array(vector: bytes | None) -> Any:
    return None if vector is None else np.frombuffer(vector, dtype=np.float32)


def _skill(row: tuple[Any, ...]) -> Skill:
    return Skill(
        agent_id=row[0],
        name=row[1],
        summary=row[2],
        content=row[3],
        see_also=decoded_list(row[4]),
        metadata=row[5],
        created_at=row[6],
        updated_at=row[7],
        last_used_at=row[8],
        archived_at=row[9],
        version=int(row[10]),
        vector=_blob(row[11]),
        vector_model=row[12],
    )


def _version(row: tuple[Any, ...]) -> SkillVersion:
    return SkillVersion(
        agent_id=row[0],
        name=row[1],
        version=int(row[2]),
        change=row[3],
        recorded_at=row[4],
        summary=row[5],
        content=row[6],
        see_also=decoded_list(row[7]),
        metadata=row[8],
        archived=bool(row[9]),
    )


def _usage(row: tuple[Any, ...]) -> SkillUsage:
    return SkillUsage(agent_id=row[0], session_id=row[1], name=row[2], used_at=row[3])


class PgSkills:
    """``SkillRepository`` on PostgreSQL."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    def _skills(self, where: str, params: Sequence[Any], tail: str = "") -> builtins.list[Skill]:
        sql = f"SELECT {_SKILL_COLUMNS} FROM skills WHERE {where} {tail}"
        return [_skill(r) for r in self._db.read(lambda c: c.execute(sql, params).fetchall())]

    def get(self, agent_id: str, name: str) -> Skill | None:
        found = self._skills("agent_id = %s AND name = %s", (agent_id, name))
        return found[0] if found else None

    def put(self, skill: Skill, *, change: str, at: datetime, expected_version: int | None = None) -> Skill:
        see_also, metadata = encode(skill)  # refused before any statement

        def values(s: Skill) -> tuple[Any, ...]:
            return (
                s.summary, s.content, see_also, metadata, s.created_at, s.updated_at, s.last_used_at,
                s.archived_at, s.version, _array(s.vector), s.vector_model,
            )  # fmt: skip

        def work(c: Conn) -> Skill:
            if expected_version in (None, 0):
                first = replace(skill, version=1)
                cur = c.execute(
                    f"INSERT INTO skills ({_SKILL_COLUMNS}) VALUES (%s, %s, %s, %s, %s::jsonb, %s::jsonb, %s, %s, %s,"
                    " %s, %s, %s, %s) ON CONFLICT (agent_id, name) DO NOTHING",
                    (skill.agent_id, skill.name, *values(first)),
                )
                if cur.rowcount:
                    _record(c, first, change, at, see_also, metadata)
                    return first
            row = c.execute(
                "SELECT version, archived_at FROM skills WHERE agent_id = %s AND name = %s FOR UPDATE",
                (skill.agent_id, skill.name),
            ).fetchone()
            live = None if row is None or row[1] is not None else int(row[0])
            refusal = cas_refusal(skill.name, live, expected_version)
            if refusal is not None:
                raise Conflict(refusal)
            if row is None:  # purged between the insert and the lock: try again from the start
                raise Conflict(f"skill {skill.name!r} changed while it was being written; try again")
            stored = replace(skill, version=int(row[0]) + 1)
            c.execute(
                "UPDATE skills SET summary = %s, content = %s, see_also = %s::jsonb, metadata = %s::jsonb,"
                " created_at = %s, updated_at = %s, last_used_at = %s, archived_at = %s, version = %s, vector = %s,"
                " vector_model = %s WHERE agent_id = %s AND name = %s",
                (*values(stored), stored.agent_id, stored.name),
            )
            _record(c, stored, change, at, see_also, metadata)
            return stored

        return self._db.write(work)

    def set_vector(self, agent_id: str, name: str, *, version: int, vector: bytes, model: str) -> bool:
        def work(c: Conn) -> bool:
            cur = c.execute(
                "UPDATE skills SET vector = %s, vector_model = %s WHERE agent_id = %s AND name = %s AND version = %s",
                (_array(vector), model, agent_id, name, version),
            )
            return cur.rowcount > 0

        return self._db.write(work)

    def touch(self, agent_id: str, names: Sequence[str], *, at: datetime) -> int:
        if not names:
            return 0

        def work(c: Conn) -> int:
            cur = c.execute(
                "UPDATE skills SET last_used_at = %s WHERE agent_id = %s AND name = ANY(%s::text[])"
                " AND archived_at IS NULL AND (last_used_at IS NULL OR last_used_at < %s)",
                (at, agent_id, list(names), at),
            )
            return int(cur.rowcount)

        return self._db.write(work)

    def list(
        self,
        agent_id: str,
        prefix: str = "",
        *,
        include_archived: bool = False,
        limit: int = 1000,
        after: str | None = None,
    ) -> builtins.list[Skill]:
        where = "agent_id = %s AND name >= %s AND starts_with(name, %s)"
        params: builtins.list[Any] = [agent_id, prefix, prefix]
        if not include_archived:
            where += " AND archived_at IS NULL"
        if after is not None:
            where += " AND name > %s"
            params.append(after)
        return self._skills(where, [*params, max(limit, 0)], "ORDER BY name LIMIT %s")

    def count(self, agent_id: str, *, include_archived: bool = False) -> int:
        where = "agent_id = %s" + ("" if include_archived else " AND archived_at IS NULL")
        row = self._db.read(lambda c: c.execute(f"SELECT count(*) FROM skills WHERE {where}", (agent_id,)).fetchone())
        return int(row[0]) if row else 0

    def _versions(self, where: str, params: Sequence[Any]) -> builtins.list[SkillVersion]:
        sql = f"SELECT {_VERSION_COLUMNS} FROM skill_versions WHERE {where} ORDER BY version"
        return [_version(r) for r in self._db.read(lambda c: c.execute(sql, params).fetchall())]

    def history(self, agent_id: str, name: str) -> builtins.list[SkillVersion]:
        return self._versions("agent_id = %s AND name = %s", (agent_id, name))

    def version(self, agent_id: str, name: str, version: int) -> SkillVersion | None:
        found = self._versions("agent_id = %s AND name = %s AND version = %s", (agent_id, name, version))
        return found[0] if found else None

    def purge_archived(self, before: datetime) -> int:
        def work(c: Conn) -> int:
            doomed = "SELECT agent_id, name FROM skills WHERE archived_at IS NOT NULL AND archived_at <= %s"
            c.execute(f"DELETE FROM skill_versions WHERE (agent_id, name) IN ({doomed})", (before,))
            cur = c.execute("DELETE FROM skills WHERE archived_at IS NOT NULL AND archived_at <= %s", (before,))
            return int(cur.rowcount)

        return self._db.write(work)

    # -- the usage log
    def add_usage(self, rows: Sequence[SkillUsage]) -> None:
        params = [(r.agent_id, r.session_id, r.name, r.used_at) for r in rows]
        if not params:
            return

        def work(c: Conn) -> None:
            with c.cursor() as cursor:
                cursor.executemany(f"INSERT INTO skill_usage ({_USAGE_COLUMNS}) VALUES (%s, %s, %s, %s)", params)

        self._db.write(work)

    def usage(
        self,
        agent_id: str,
        *,
        since: datetime | None = None,
        session_ids: Sequence[str] | None = None,
        name: str | None = None,
        limit: int = 1000,
    ) -> builtins.list[SkillUsage]:
        where = "agent_id = %s"
        params: builtins.list[Any] = [agent_id]
        if since is not None:
            where += " AND used_at >= %s"
            params.append(since)
        if session_ids is not None:
            where += " AND session_id = ANY(%s::text[])"
            params.append(list(session_ids))
        if name is not None:
            where += " AND name = %s"
            params.append(name)
        sql = f"SELECT {_USAGE_COLUMNS} FROM skill_usage WHERE {where} ORDER BY used_at DESC, seq DESC LIMIT %s"
        params.append(max(limit, 0))
        return [_usage(r) for r in self._db.read(lambda c: c.execute(sql, params).fetchall())]

    def usage_counts(self, agent_id: str, since: datetime) -> dict[str, int]:
        rows = self._db.read(
            lambda c: c.execute(
                f"SELECT name, count(*) FROM skill_usage u WHERE agent_id = %s AND used_at >= %s AND {_LIVE_SKILL}"
                " GROUP BY name ORDER BY name",
                (agent_id, since),
            ).fetchall()
        )
        return {str(name): int(n) for name, n in rows}

    def co_usage(self, agent_id: str, since: datetime, limit: int) -> builtins.list[CoUsage]:
        used = (
            "SELECT DISTINCT session_id, name FROM skill_usage u WHERE agent_id = %s AND used_at >= %s"
            f" AND {_LIVE_SKILL}"
        )
        rows = self._db.read(
            lambda c: c.execute(
                f"WITH used AS ({used}) SELECT a.name, b.name, count(*) AS n FROM used a"
                " JOIN used b ON a.session_id = b.session_id AND a.name < b.name"
                " GROUP BY a.name, b.name ORDER BY n DESC, a.name, b.name LIMIT %s",
                (agent_id, since, max(limit, 0)),
            ).fetchall()
        )
        return [CoUsage(str(a), str(b), int(n)) for a, b, n in rows]

    def purge_usage(self, before: datetime) -> int:
        return self._db.write(
            lambda c: int(c.execute("DELETE FROM skill_usage WHERE used_at < %s", (before,)).rowcount)
        )


def _record(c: Conn, s: Skill, change: str, at: datetime, see_also: str, metadata: str) -> None:
    """The version row of the state ``s`` a put just wrote."""
    c.execute(
        f"INSERT INTO skill_versions ({_VERSION_COLUMNS})"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s)",
        (s.agent_id, s.name, s.version, change, at, s.summary, s.content, see_also, metadata, s.archived),
    )


def _feedback(row: tuple[Any, ...]) -> Feedback:
    return Feedback(
        feedback_id=row[0],
        agent_id=row[1],
        session_id=row[2],
        kind=row[3],
        rating=row[4],
        comment=row[5],
        entry_ids=decoded_list(row[6]),
        skill_names=decoded_list(row[7]),
        created_at=row[8],
    )


class PgFeedback:
    """``FeedbackRepository`` on PostgreSQL."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    def add(self, feedback: Feedback) -> None:
        entry_ids, skill_names = encode_feedback(feedback)
        f = feedback
        params = (
            f.feedback_id, f.agent_id, f.session_id, f.kind, f.rating, f.comment, entry_ids, skill_names,
            f.created_at,
        )  # fmt: skip
        self._db.write(
            lambda c: c.execute(
                f"INSERT INTO feedback ({_FEEDBACK_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s)",
                params,
            )
        )

    def get(self, agent_id: str, feedback_id: str) -> Feedback | None:
        row = self._db.read(
            lambda c: c.execute(
                f"SELECT {_FEEDBACK_COLUMNS} FROM feedback WHERE agent_id = %s AND feedback_id = %s",
                (agent_id, feedback_id),
            ).fetchone()
        )
        return None if row is None else _feedback(row)

    def list(
        self,
        agent_id: str,
        *,
        since: datetime | None = None,
        kinds: Sequence[str] | None = None,
        session_ids: Sequence[str] | None = None,
        limit: int = 1000,
    ) -> builtins.list[Feedback]:
        where = "agent_id = %s"
        params: builtins.list[Any] = [agent_id]
        if since is not None:
            where += " AND created_at >= %s"
            params.append(since)
        for column, values in (("kind", kinds), ("session_id", session_ids)):
            if values is not None:
                where += f" AND {column} = ANY(%s::text[])"
                params.append(list(values))
        sql = f"SELECT {_FEEDBACK_COLUMNS} FROM feedback WHERE {where} ORDER BY created_at DESC, seq DESC LIMIT %s"
        params.append(max(limit, 0))
        return [_feedback(r) for r in self._db.read(lambda c: c.execute(sql, params).fetchall())]

    def purge_before(self, before: datetime) -> int:
        return self._db.write(
            lambda c: int(c.execute("DELETE FROM feedback WHERE created_at < %s", (before,)).rowcount)
        )

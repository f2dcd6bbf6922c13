"""Skills, the skill-usage log and the feedback log (``SkillRepository``, ``FeedbackRepository``,
``storage.skills``), written once for both backends: ``skills``, ``skill_versions``, ``skill_usage``,
``feedback``.

Invariants:
- Every query names the agent: one agent never reads or changes another's skills, usage or feedback.
- Every write is one ``Database.write`` transaction (joining the caller's ``Store.transaction()``). A put of
  a new name goes in with ``ON CONFLICT DO NOTHING``; otherwise it reads the name's row, locked (``FOR
  UPDATE`` on PostgreSQL; SQLite takes the write lock up front), before it compares versions. So a
  compare-and-set reads and writes one state, two writers of one name serialise and never error (the second
  sees the first's version), and a skill's row and its version row commit together.
- Names order and compare by code point (SQLite's BINARY collation; the columns are ``COLLATE "C"`` on
  PostgreSQL); a prefix matches by characters (``Dialect.starts_with``), never by ``LIKE``.
- JSON is encoded by ``skills_codec`` with one set of rules. Timestamps go in and come out in UTC, and
  compare as times on both backends (SQLite's fixed-width UTC text sorts in time order).
- A skill's vector is float32 bytes to callers. SQLite stores the bytes (BLOB); a backend that stores it
  otherwise overrides ``_vector_param`` / ``_vector_out`` (PostgreSQL: pgvector, ``postgres/skills.py``).
- The hidden ``seq`` columns are insertion order: the tie-break of "newest first".
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from contextlib import closing
from dataclasses import replace
from datetime import datetime
from typing import Any

from reverie.errors import Conflict
from reverie.storage.skills_codec import cas_refusal, decoded_list, encode, encode_feedback
from reverie.storage.sql.dialect import Dialect, SqlDatabase
from reverie.types import CoUsage, Feedback, Skill, SkillUsage, SkillVersion

_SKILL_COLUMNS = (
    "agent_id, name, summary, content, see_also, metadata, created_at, updated_at, last_used_at, archived_at,"
    " version, vector, vector_model"
)
_VERSION_COLUMNS = "agent_id, name, version, change, recorded_at, summary, content, see_also, metadata, archived"
_USAGE_COLUMNS = "agent_id, session_id, name, used_at"
_FEEDBACK_COLUMNS = "feedback_id, agent_id, session_id, kind, rating, comment, entry_ids, skill_names, created_at"
# A skill live now, for the usage queries; the outer row's alias is ``u``.
_LIVE_SKILL = (
    "EXISTS (SELECT 1 FROM skills s WHERE s.agent_id = u.agent_id AND s.name = u.name AND s.archived_at IS NULL)"
)


class SqlSkills:
    """``SkillRepository`` over either backend."""

    def __init__(self, db: SqlDatabase, dialect: Dialect) -> None:
        self._db = db
        self._d = dialect

    # -- the vector: the one column the backends store differently
    def _vector_param(self, vector: bytes | None) -> Any:
        """A vector parameter (SQLite: the float32 bytes themselves)."""
        return vector

    def _vector_out(self, value: Any) -> bytes | None:
        """A stored vector as float32 bytes, or None."""
        return None if value is None else bytes(value)

    # -- rows
    def _skill(self, row: tuple[Any, ...]) -> Skill:
        d = self._d
        return Skill(
            agent_id=row[0],
            name=row[1],
            summary=row[2],
            content=row[3],
            see_also=decoded_list(d.json_out(row[4])),
            metadata=d.json_out(row[5]),
            created_at=d.ts_out(row[6]),
            updated_at=d.ts_out(row[7]),
            last_used_at=d.ts_out_or_none(row[8]),
            archived_at=d.ts_out_or_none(row[9]),
            version=int(row[10]),
            vector=self._vector_out(row[11]),
            vector_model=row[12],
        )

    def _version(self, row: tuple[Any, ...]) -> SkillVersion:
        d = self._d
        return SkillVersion(
            agent_id=row[0],
            name=row[1],
            version=int(row[2]),
            change=row[3],
            recorded_at=d.ts_out(row[4]),
            summary=row[5],
            content=row[6],
            see_also=decoded_list(d.json_out(row[7])),
            metadata=d.json_out(row[8]),
            archived=bool(row[9]),
        )

    def _usage(self, row: tuple[Any, ...]) -> SkillUsage:
        return SkillUsage(agent_id=row[0], session_id=row[1], name=row[2], used_at=self._d.ts_out(row[3]))

    def _skills(self, where: str, params: Sequence[Any], tail: str = "") -> builtins.list[Skill]:
        statement = self._d.sql(f"SELECT {_SKILL_COLUMNS} FROM skills WHERE {where} {tail}")
        return [self._skill(r) for r in self._db.read(lambda c: c.execute(statement, params).fetchall())]

    def get(self, agent_id: str, name: str) -> Skill | None:
        found = self._skills("agent_id = ? AND name = ?", (agent_id, name))
        return found[0] if found else None

    def put(self, skill: Skill, *, change: str, at: datetime, expected_version: int | None = None) -> Skill:
        d = self._d
        see_also, metadata = (d.json_encoded(text) for text in encode(skill))  # refused before any statement
        insert = d.sql(
            f"INSERT INTO skills ({_SKILL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (agent_id, name) DO NOTHING"
        )
        select = d.sql(f"SELECT version, archived_at FROM skills WHERE agent_id = ? AND name = ?{d.for_update()}")
        update = d.sql(
            "UPDATE skills SET summary = ?, content = ?, see_also = ?, metadata = ?, created_at = ?, updated_at = ?,"
            " last_used_at = ?, archived_at = ?, version = ?, vector = ?, vector_model = ?"
            " WHERE agent_id = ? AND name = ?"
        )
        record = d.sql(f"INSERT INTO skill_versions ({_VERSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")

        def values(s: Skill) -> tuple[Any, ...]:
            return (
                s.summary, s.content, see_also, metadata, d.ts(s.created_at), d.ts(s.updated_at),
                d.ts_or_none(s.last_used_at), d.ts_or_none(s.archived_at), s.version, self._vector_param(s.vector),
                s.vector_model,
            )  # fmt: skip

        def recorded(c: Any, s: Skill) -> Skill:
            """``s``, after writing the version row of the state a put just wrote."""
            c.execute(
                record,
                (
                    s.agent_id, s.name, s.version, change, d.ts(at), s.summary, s.content, see_also, metadata,
                    d.flag(s.archived),
                ),
            )  # fmt: skip
            return s

        def work(c: Any) -> Skill:
            if expected_version in (None, 0):
                first = replace(skill, version=1)
                if c.execute(insert, (skill.agent_id, skill.name, *values(first))).rowcount:
                    return recorded(c, first)
            row = c.execute(select, (skill.agent_id, skill.name)).fetchone()
            live = None if row is None or row[1] is not None else int(row[0])
            refusal = cas_refusal(skill.name, live, expected_version)
            if refusal is not None:
                raise Conflict(refusal)
            if row is None:  # PostgreSQL: purged between the insert and the lock; try again from the start
                raise Conflict(f"skill {skill.name!r} changed while it was being written; try again")
            stored = replace(skill, version=int(row[0]) + 1)
            c.execute(update, (*values(stored), stored.agent_id, stored.name))
            return recorded(c, stored)

        return self._db.write(work)

    def set_vector(self, agent_id: str, name: str, *, version: int, vector: bytes, model: str) -> bool:
        statement = self._d.sql(
            "UPDATE skills SET vector = ?, vector_model = ? WHERE agent_id = ? AND name = ? AND version = ?"
        )
        params = (self._vector_param(vector), model, agent_id, name, version)
        return self._db.write(lambda c: bool(c.execute(statement, params).rowcount > 0))

    def touch(self, agent_id: str, names: Sequence[str], *, at: datetime) -> int:
        if not names:
            return 0
        d = self._d
        stamp = d.ts(at)
        statement = d.sql(
            f"UPDATE skills SET last_used_at = ? WHERE agent_id = ? AND {d.in_list('name')}"
            " AND archived_at IS NULL AND (last_used_at IS NULL OR last_used_at < ?)"
        )
        params = (stamp, agent_id, d.text_list(names), stamp)
        return self._db.write(lambda c: int(c.execute(statement, params).rowcount))

    def list(
        self,
        agent_id: str,
        prefix: str = "",
        *,
        include_archived: bool = False,
        limit: int = 1000,
        after: str | None = None,
    ) -> builtins.list[Skill]:
        starts, starts_params = self._d.starts_with("name", prefix)
        where = f"agent_id = ? AND {starts}"
        params: builtins.list[Any] = [agent_id, *starts_params]
        if not include_archived:
            where += " AND archived_at IS NULL"
        if after is not None:
            where += " AND name > ?"
            params.append(after)
        return self._skills(where, [*params, max(limit, 0)], "ORDER BY name LIMIT ?")

    def count(self, agent_id: str, *, include_archived: bool = False) -> int:
        where = "agent_id = ?" + ("" if include_archived else " AND archived_at IS NULL")
        statement = self._d.sql(f"SELECT count(*) FROM skills WHERE {where}")
        row = self._db.read(lambda c: c.execute(statement, (agent_id,)).fetchone())
        return int(row[0]) if row else 0

    def _versions(self, where: str, params: Sequence[Any], tail: str = "") -> builtins.list[SkillVersion]:
        statement = self._d.sql(f"SELECT {_VERSION_COLUMNS} FROM skill_versions WHERE {where} ORDER BY version{tail}")
        return [self._version(r) for r in self._db.read(lambda c: c.execute(statement, params).fetchall())]

    def history(self, agent_id: str, name: str) -> builtins.list[SkillVersion]:
        return self._versions("agent_id = ? AND name = ?", (agent_id, name))

    def history_page(self, agent_id: str, name: str, after: int | None, limit: int) -> builtins.list[SkillVersion]:
        # Keyset on the version number: versions are append-only, so a walk is exact.
        return self._versions(
            "agent_id = ? AND name = ? AND version > ?", (agent_id, name, after or 0, max(limit, 0)), " LIMIT ?"
        )

    def version(self, agent_id: str, name: str, version: int) -> SkillVersion | None:
        found = self._versions("agent_id = ? AND name = ? AND version = ?", (agent_id, name, version))
        return found[0] if found else None

    def purge_archived(self, before: datetime) -> int:
        d = self._d
        doomed = "SELECT agent_id, name FROM skills WHERE archived_at IS NOT NULL AND archived_at <= ?"
        versions = d.sql(f"DELETE FROM skill_versions WHERE (agent_id, name) IN ({doomed})")
        skills = d.sql("DELETE FROM skills WHERE archived_at IS NOT NULL AND archived_at <= ?")
        params = (d.ts(before),)

        def work(c: Any) -> int:
            c.execute(versions, params)
            return int(c.execute(skills, params).rowcount)

        return self._db.write(work)

    # -- the usage log
    def add_usage(self, rows: Sequence[SkillUsage]) -> None:
        params = [(r.agent_id, r.session_id, r.name, self._d.ts(r.used_at)) for r in rows]
        if not params:
            return
        statement = self._d.sql(f"INSERT INTO skill_usage ({_USAGE_COLUMNS}) VALUES (?, ?, ?, ?)")

        def work(c: Any) -> None:
            with closing(c.cursor()) as cursor:
                cursor.executemany(statement, params)

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
        d = self._d
        where = "agent_id = ?"
        params: builtins.list[Any] = [agent_id]
        if since is not None:
            where += " AND used_at >= ?"
            params.append(d.ts(since))
        if session_ids is not None:
            where += f" AND {d.in_list('session_id')}"
            params.append(d.text_list(session_ids))
        if name is not None:
            where += " AND name = ?"
            params.append(name)
        statement = d.sql(
            f"SELECT {_USAGE_COLUMNS} FROM skill_usage WHERE {where} ORDER BY used_at DESC, seq DESC LIMIT ?"
        )
        params.append(max(limit, 0))
        return [self._usage(r) for r in self._db.read(lambda c: c.execute(statement, params).fetchall())]

    def usage_counts(self, agent_id: str, since: datetime) -> dict[str, int]:
        statement = self._d.sql(
            f"SELECT name, count(*) FROM skill_usage u WHERE agent_id = ? AND used_at >= ? AND {_LIVE_SKILL}"
            " GROUP BY name ORDER BY name"
        )
        params = (agent_id, self._d.ts(since))
        rows = self._db.read(lambda c: c.execute(statement, params).fetchall())
        return {str(name): int(n) for name, n in rows}

    def co_usage(self, agent_id: str, since: datetime, limit: int) -> builtins.list[CoUsage]:
        # The distinct (session, skill) pairs of the window, of skills live now, joined on the session.
        used = (
            f"SELECT DISTINCT session_id, name FROM skill_usage u WHERE agent_id = ? AND used_at >= ? AND {_LIVE_SKILL}"
        )
        statement = self._d.sql(
            f"WITH used AS ({used}) SELECT a.name, b.name, count(*) AS n FROM used a"
            " JOIN used b ON a.session_id = b.session_id AND a.name < b.name"
            " GROUP BY a.name, b.name ORDER BY n DESC, a.name, b.name LIMIT ?"
        )
        params = (agent_id, self._d.ts(since), max(limit, 0))
        rows = self._db.read(lambda c: c.execute(statement, params).fetchall())
        return [CoUsage(str(a), str(b), int(n)) for a, b, n in rows]

    def purge_usage(self, before: datetime) -> int:
        statement = self._d.sql("DELETE FROM skill_usage WHERE used_at < ?")
        params = (self._d.ts(before),)
        return self._db.write(lambda c: int(c.execute(statement, params).rowcount))


class SqlFeedback:
    """``FeedbackRepository`` over either backend."""

    def __init__(self, db: SqlDatabase, dialect: Dialect) -> None:
        self._db = db
        self._d = dialect

    def _feedback(self, row: tuple[Any, ...]) -> Feedback:
        d = self._d
        return Feedback(
            feedback_id=row[0],
            agent_id=row[1],
            session_id=row[2],
            kind=row[3],
            rating=row[4],
            comment=row[5],
            entry_ids=decoded_list(d.json_out(row[6])),
            skill_names=decoded_list(d.json_out(row[7])),
            created_at=d.ts_out(row[8]),
        )

    def add(self, feedback: Feedback) -> None:
        d = self._d
        entry_ids, skill_names = (d.json_encoded(text) for text in encode_feedback(feedback))
        f = feedback
        params = (
            f.feedback_id, f.agent_id, f.session_id, f.kind, f.rating, f.comment, entry_ids, skill_names,
            d.ts(f.created_at),
        )  # fmt: skip
        statement = d.sql(f"INSERT INTO feedback ({_FEEDBACK_COLUMNS}) VALUES ({', '.join('?' * 9)})")
        self._db.write(lambda c: c.execute(statement, params))

    def get(self, agent_id: str, feedback_id: str) -> Feedback | None:
        statement = self._d.sql(f"SELECT {_FEEDBACK_COLUMNS} FROM feedback WHERE agent_id = ? AND feedback_id = ?")
        row = self._db.read(lambda c: c.execute(statement, (agent_id, feedback_id)).fetchone())
        return None if row is None else self._feedback(row)

    def list(
        self,
        agent_id: str,
        *,
        since: datetime | None = None,
        kinds: Sequence[str] | None = None,
        session_ids: Sequence[str] | None = None,
        limit: int = 1000,
    ) -> builtins.list[Feedback]:
        d = self._d
        where = "agent_id = ?"
        params: builtins.list[Any] = [agent_id]
        if since is not None:
            where += " AND created_at >= ?"
            params.append(d.ts(since))
        for column, values in (("kind", kinds), ("session_id", session_ids)):
            if values is not None:
                where += f" AND {d.in_list(column)}"
                params.append(d.text_list(values))
        statement = d.sql(
            f"SELECT {_FEEDBACK_COLUMNS} FROM feedback WHERE {where} ORDER BY created_at DESC, seq DESC LIMIT ?"
        )
        params.append(max(limit, 0))
        return [self._feedback(r) for r in self._db.read(lambda c: c.execute(statement, params).fetchall())]

    def purge_before(self, before: datetime) -> int:
        statement = self._d.sql("DELETE FROM feedback WHERE created_at < ?")
        params = (self._d.ts(before),)
        return self._db.write(lambda c: int(c.execute(statement, params).rowcount))

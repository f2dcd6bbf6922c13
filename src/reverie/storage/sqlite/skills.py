"""Skills, the skill-usage log and the feedback log on SQLite: ``skills``, ``skill_versions``, ``skill_usage``,
``feedback`` (``storage.skills``).

Invariants:
- Every query names the agent: one agent never reads or changes another's skills, usage or feedback.
- Every write is one ``Database.write`` transaction (joining the caller's ``Store.transaction()``), and
  SQLite takes the write lock up front, so a compare-and-set reads and writes one state, and a skill's row
  and its version row are written together.
- Names order and compare by code point (SQLite's BINARY collation on UTF-8); a prefix matches by characters
  (``substr``), never by ``LIKE``. JSON is text; timestamps are fixed-width UTC text (``database.ts``), so
  comparing them as text compares the times.
- The hidden ``seq`` columns are insertion order: the tie-break of "newest first".
"""

from __future__ import annotations

import builtins
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from reverie.errors import Conflict
from reverie.storage.skills_codec import cas_refusal, decoded_list, encode, encode_feedback
from reverie.storage.sqlite.database import Database, parse_ts, parse_ts_or_none, ts, ts_or_none
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


def _skill(row: tuple[Any, ...]) -> Skill:
    return Skill(
        agent_id=row[0],
        name=row[1],
        summary=row[2],
        content=row[3],
        see_also=decoded_list(json.loads(row[4])),
        metadata=json.loads(row[5]),
        created_at=parse_ts(row[6]),
        updated_at=parse_ts(row[7]),
        last_used_at=parse_ts_or_none(row[8]),
        archived_at=parse_ts_or_none(row[9]),
        version=int(row[10]),
        vector=None if row[11] is None else bytes(row[11]),
        vector_model=row[12],
    )


def _version(row: tuple[Any, ...]) -> SkillVersion:
    return SkillVersion(
        agent_id=row[0],
        name=row[1],
        version=int(row[2]),
        change=row[3],
        recorded_at=parse_ts(row[4]),
        summary=row[5],
        content=row[6],
        see_also=decoded_list(json.loads(row[7])),
        metadata=json.loads(row[8]),
        archived=bool(row[9]),
    )


def _usage(row: tuple[Any, ...]) -> SkillUsage:
    return SkillUsage(agent_id=row[0], session_id=row[1], name=row[2], used_at=parse_ts(row[3]))


def _in_json(column: str) -> str:
    return f"{column} IN (SELECT value FROM json_each(?))"


class SqliteSkills:
    """``SkillRepository`` on SQLite."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def _skills(self, where: str, params: Sequence[Any], tail: str = "") -> builtins.list[Skill]:
        sql = f"SELECT {_SKILL_COLUMNS} FROM skills WHERE {where} {tail}"
        return [_skill(r) for r in self._db.read(lambda c: c.execute(sql, params).fetchall())]

    def get(self, agent_id: str, name: str) -> Skill | None:
        found = self._skills("agent_id = ? AND name = ?", (agent_id, name))
        return found[0] if found else None

    def put(self, skill: Skill, *, change: str, at: datetime, expected_version: int | None = None) -> Skill:
        see_also, metadata = encode(skill)  # refused before any statement

        def work(c: sqlite3.Connection) -> Skill:
            row = c.execute(
                "SELECT version, archived_at FROM skills WHERE agent_id = ? AND name = ?", (skill.agent_id, skill.name)
            ).fetchone()
            live = None if row is None or row[1] is not None else int(row[0])
            refusal = cas_refusal(skill.name, live, expected_version)
            if refusal is not None:
                raise Conflict(refusal)
            stored = replace(skill, version=1 if row is None else int(row[0]) + 1)
            values = (
                stored.summary, stored.content, see_also, metadata, ts(stored.created_at), ts(stored.updated_at),
                ts_or_none(stored.last_used_at), ts_or_none(stored.archived_at), stored.version, stored.vector,
                stored.vector_model,
            )  # fmt: skip
            if row is None:
                c.execute(
                    f"INSERT INTO skills ({_SKILL_COLUMNS}) VALUES (?, ?, {', '.join('?' for _ in values)})",
                    (stored.agent_id, stored.name, *values),
                )
            else:
                c.execute(
                    "UPDATE skills SET summary = ?, content = ?, see_also = ?, metadata = ?, created_at = ?,"
                    " updated_at = ?, last_used_at = ?, archived_at = ?, version = ?, vector = ?, vector_model = ?"
                    " WHERE agent_id = ? AND name = ?",
                    (*values, stored.agent_id, stored.name),
                )
            c.execute(
                f"INSERT INTO skill_versions ({_VERSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    stored.agent_id, stored.name, stored.version, change, ts(at), stored.summary, stored.content,
                    see_also, metadata, int(stored.archived),
                ),
            )  # fmt: skip
            return stored

        return self._db.write(work)

    def set_vector(self, agent_id: str, name: str, *, version: int, vector: bytes, model: str) -> bool:
        def work(c: sqlite3.Connection) -> bool:
            cur = c.execute(
                "UPDATE skills SET vector = ?, vector_model = ? WHERE agent_id = ? AND name = ? AND version = ?",
                (vector, model, agent_id, name, version),
            )
            return cur.rowcount > 0

        return self._db.write(work)

    def touch(self, agent_id: str, names: Sequence[str], *, at: datetime) -> int:
        if not names:
            return 0
        stamp = ts(at)

        def work(c: sqlite3.Connection) -> int:
            cur = c.execute(
                f"UPDATE skills SET last_used_at = ? WHERE agent_id = ? AND {_in_json('name')}"
                " AND archived_at IS NULL AND (last_used_at IS NULL OR last_used_at < ?)",
                (stamp, agent_id, json.dumps(list(names)), stamp),
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
        where = "agent_id = ? AND name >= ? AND substr(name, 1, ?) = ?"
        params: builtins.list[Any] = [agent_id, prefix, len(prefix), prefix]
        if not include_archived:
            where += " AND archived_at IS NULL"
        if after is not None:
            where += " AND name > ?"
            params.append(after)
        return self._skills(where, [*params, max(limit, 0)], "ORDER BY name LIMIT ?")

    def count(self, agent_id: str, *, include_archived: bool = False) -> int:
        where = "agent_id = ?" + ("" if include_archived else " AND archived_at IS NULL")
        (found,) = self._db.read(
            lambda c: c.execute(f"SELECT count(*) FROM skills WHERE {where}", (agent_id,)).fetchone()
        )
        return int(found)

    def _versions(self, where: str, params: Sequence[Any]) -> builtins.list[SkillVersion]:
        sql = f"SELECT {_VERSION_COLUMNS} FROM skill_versions WHERE {where} ORDER BY version"
        return [_version(r) for r in self._db.read(lambda c: c.execute(sql, params).fetchall())]

    def history(self, agent_id: str, name: str) -> builtins.list[SkillVersion]:
        return self._versions("agent_id = ? AND name = ?", (agent_id, name))

    def version(self, agent_id: str, name: str, version: int) -> SkillVersion | None:
        found = self._versions("agent_id = ? AND name = ? AND version = ?", (agent_id, name, version))
        return found[0] if found else None

    def purge_archived(self, before: datetime) -> int:
        def work(c: sqlite3.Connection) -> int:
            doomed = "SELECT agent_id, name FROM skills WHERE archived_at IS NOT NULL AND archived_at <= ?"
            c.execute(f"DELETE FROM skill_versions WHERE (agent_id, name) IN ({doomed})", (ts(before),))
            cur = c.execute("DELETE FROM skills WHERE archived_at IS NOT NULL AND archived_at <= ?", (ts(before),))
            return int(cur.rowcount)

        return self._db.write(work)

    # -- the usage log
    def add_usage(self, rows: Sequence[SkillUsage]) -> None:
        params = [(r.agent_id, r.session_id, r.name, ts(r.used_at)) for r in rows]
        if params:
            self._db.write(
                lambda c: c.executemany(f"INSERT INTO skill_usage ({_USAGE_COLUMNS}) VALUES (?, ?, ?, ?)", params)
            )

    def usage(
        self,
        agent_id: str,
        *,
        since: datetime | None = None,
        session_ids: Sequence[str] | None = None,
        name: str | None = None,
        limit: int = 1000,
    ) -> builtins.list[SkillUsage]:
        where = "agent_id = ?"
        params: builtins.list[Any] = [agent_id]
        if since is not None:
            where += " AND used_at >= ?"
            params.append(ts(since))
        if session_ids is not None:
            where += f" AND {_in_json('session_id')}"
            params.append(json.dumps(list(session_ids)))
        if name is not None:
            where += " AND name = ?"
            params.append(name)
        sql = f"SELECT {_USAGE_COLUMNS} FROM skill_usage WHERE {where} ORDER BY used_at DESC, seq DESC LIMIT ?"
        params.append(max(limit, 0))
        return [_usage(r) for r in self._db.read(lambda c: c.execute(sql, params).fetchall())]

    def usage_counts(self, agent_id: str, since: datetime) -> dict[str, int]:
        rows = self._db.read(
            lambda c: c.execute(
                f"SELECT name, count(*) FROM skill_usage u WHERE agent_id = ? AND used_at >= ? AND {_LIVE_SKILL}"
                " GROUP BY name ORDER BY name",
                (agent_id, ts(since)),
            ).fetchall()
        )
        return {str(name): int(n) for name, n in rows}

    def co_usage(self, agent_id: str, since: datetime, limit: int) -> builtins.list[CoUsage]:
        # The distinct (session, skill) pairs of the window, of skills live now, joined on the session.
        used = (
            f"SELECT DISTINCT session_id, name FROM skill_usage u WHERE agent_id = ? AND used_at >= ? AND {_LIVE_SKILL}"
        )
        rows = self._db.read(
            lambda c: c.execute(
                f"WITH used AS ({used}) SELECT a.name, b.name, count(*) AS n FROM used a"
                " JOIN used b ON a.session_id = b.session_id AND a.name < b.name"
                " GROUP BY a.name, b.name ORDER BY n DESC, a.name, b.name LIMIT ?",
                (agent_id, ts(since), max(limit, 0)),
            ).fetchall()
        )
        return [CoUsage(str(a), str(b), int(n)) for a, b, n in rows]

    def purge_usage(self, before: datetime) -> int:
        return self._db.write(
            lambda c: int(c.execute("DELETE FROM skill_usage WHERE used_at < ?", (ts(before),)).rowcount)
        )


def _feedback(row: tuple[Any, ...]) -> Feedback:
    return Feedback(
        feedback_id=row[0],
        agent_id=row[1],
        session_id=row[2],
        kind=row[3],
        rating=row[4],
        comment=row[5],
        entry_ids=decoded_list(json.loads(row[6])),
        skill_names=decoded_list(json.loads(row[7])),
        created_at=parse_ts(row[8]),
    )


class SqliteFeedback:
    """``FeedbackRepository`` on SQLite."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, feedback: Feedback) -> None:
        entry_ids, skill_names = encode_feedback(feedback)
        f = feedback
        params = (
            f.feedback_id, f.agent_id, f.session_id, f.kind, f.rating, f.comment, entry_ids, skill_names,
            ts(f.created_at),
        )  # fmt: skip
        self._db.write(
            lambda c: c.execute(f"INSERT INTO feedback ({_FEEDBACK_COLUMNS}) VALUES ({', '.join('?' * 9)})", params)
        )

    def get(self, agent_id: str, feedback_id: str) -> Feedback | None:
        row = self._db.read(
            lambda c: c.execute(
                f"SELECT {_FEEDBACK_COLUMNS} FROM feedback WHERE agent_id = ? AND feedback_id = ?",
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
        where = "agent_id = ?"
        params: builtins.list[Any] = [agent_id]
        if since is not None:
            where += " AND created_at >= ?"
            params.append(ts(since))
        for column, values in (("kind", kinds), ("session_id", session_ids)):
            if values is not None:
                where += f" AND {_in_json(column)}"
                params.append(json.dumps(list(values)))
        sql = f"SELECT {_FEEDBACK_COLUMNS} FROM feedback WHERE {where} ORDER BY created_at DESC, seq DESC LIMIT ?"
        params.append(max(limit, 0))
        return [_feedback(r) for r in self._db.read(lambda c: c.execute(sql, params).fetchall())]

    def purge_before(self, before: datetime) -> int:
        return self._db.write(
            lambda c: int(c.execute("DELETE FROM feedback WHERE created_at < ?", (ts(before),)).rowcount)
        )

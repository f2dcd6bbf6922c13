"""The ``Store`` written once: repositories, transactions, migrations, portable rows and health checks.

``SqlStore`` builds the repositories of ``storage/sql/`` over a backend's database and dialect, and takes
the ones a backend subclasses (facts, vectors, dream, skills) ready-made; its type parameters keep their
narrower types (``PgStore.vectors`` is a ``PgVectors``, which also implements ``NearestVectors``). A backend
store (``SqliteStore``, ``PgStore``) opens its database, applies its migrations, and keeps what differs:
its location and size, integrity and full-text checks, backup and restore, vacuum and close.

Invariants:
- One database per store: every repository, transaction and portable-row method goes through ``db``.
- ``check`` reports each check as ``"ok"`` or what is wrong; with ``repair`` it rebuilds what can be rebuilt
  (the full-text index, missing first versions) and checks again. ``ok`` ignores the migrations line.
  A store that fails its integrity check is never written by a repair (a write into a damaged file can
  spread the damage): the other checks are not run and nothing is rebuilt; ``quick`` runs only the
  integrity check, in its fast form.
- A repair of missing versions records an entry's current state as its version 1, changed ``housekeeping``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from reverie.storage.sql.activity import SqlActivityLogs, SqlInjected
from reverie.storage.sql.dialect import Dialect, SqlDatabase
from reverie.storage.sql.dream import SqlDream
from reverie.storage.sql.facts import SqlFacts, SqlVersions
from reverie.storage.sql.graph import SqlGraph
from reverie.storage.sql.keys import SqlKeys
from reverie.storage.sql.kv import SqlKv
from reverie.storage.sql.rows import SqlRows
from reverie.storage.sql.sessions import SqlSessions
from reverie.storage.sql.skills import SqlFeedback, SqlSkills
from reverie.storage.sql.usage import SqlUsage
from reverie.storage.sql.vectors import SqlMeta, SqlVectors
from reverie.storage.sql.working import SqlWorking
from reverie.types import HealthReport, StoreStats

DB = TypeVar("DB", bound=SqlDatabase)
F = TypeVar("F", bound=SqlFacts)
V = TypeVar("V", bound=SqlVectors)
D = TypeVar("D", bound=SqlDream)
S = TypeVar("S", bound=SqlSkills)


class Migrations(Protocol):
    """A backend's migrations module, as far as the store reads it."""

    def applied(self, db: Any, /) -> list[tuple[str, datetime]]: ...


class SqlStore(ABC, Generic[DB, F, V, D, S]):
    """The repositories and maintenance both backends share; a subclass supplies the hooks below."""

    def __init__(
        self,
        db: DB,
        dialect: Dialect,
        *,
        facts: F,
        vectors: V,
        dream: D,
        skills: S,
        rows: SqlRows,
        migrations: Migrations,
    ) -> None:
        self._db = db
        self._rows = rows
        self._migrations = migrations
        self._facts = facts
        self._versions = SqlVersions(db, dialect)
        self._vectors = vectors
        self._meta = SqlMeta(db, dialect)
        self._dream = dream
        self._sessions = SqlSessions(db, dialect)
        self._working = SqlWorking(db, dialect)
        self._keys = SqlKeys(db, dialect)
        self._usage = SqlUsage(db, dialect)
        self._logs = SqlActivityLogs(db, dialect)
        self._injected = SqlInjected(db, dialect)
        self._kv = SqlKv(db, dialect)
        self._graph = SqlGraph(db, dialect, self.read_snapshot)
        self._skills = skills
        self._feedback = SqlFeedback(db, dialect)

    # -- what a backend supplies -----------------------------------------------------------------------
    @abstractmethod
    def _location(self) -> str:
        """Where the store is, for ``stats``."""

    @abstractmethod
    def _size(self, c: Any) -> int:
        """The store's size in bytes, for ``stats`` (``c``: the connection ``stats`` reads through)."""

    @abstractmethod
    def _integrity(self) -> str:
        """The database's own integrity check: ``"ok"`` or the problems found."""

    def _quick_integrity(self) -> str:
        """A fast form of ``_integrity`` (a server's start); the full check unless the backend has one."""
        return self._integrity()

    @property
    def read_only(self) -> bool:
        """Whether every write is refused (a backend that can open read-only says so)."""
        return False

    @abstractmethod
    def _fts_consistency(self) -> str:
        """Whether the full-text index is in step with the facts table: ``"ok"`` or what is wrong."""

    @abstractmethod
    def _repair_fts(self) -> str:
        """Rebuild the full-text index; what was done, for the health report."""

    # -- repositories ----------------------------------------------------------------------------------
    @property
    def facts(self) -> F:
        return self._facts

    @property
    def versions(self) -> SqlVersions:
        return self._versions

    @property
    def vectors(self) -> V:
        return self._vectors

    @property
    def meta(self) -> SqlMeta:
        return self._meta

    @property
    def dream(self) -> D:
        return self._dream

    @property
    def sessions(self) -> SqlSessions:
        return self._sessions

    @property
    def working(self) -> SqlWorking:
        return self._working

    @property
    def keys(self) -> SqlKeys:
        return self._keys

    @property
    def usage(self) -> SqlUsage:
        return self._usage

    @property
    def logs(self) -> SqlActivityLogs:
        return self._logs

    @property
    def injected(self) -> SqlInjected:
        return self._injected

    @property
    def kv(self) -> SqlKv:
        return self._kv

    @property
    def graph(self) -> SqlGraph:
        return self._graph

    @property
    def skills(self) -> S:
        return self._skills

    @property
    def feedback(self) -> SqlFeedback:
        return self._feedback

    def transaction(self) -> AbstractContextManager[None]:
        return self._db.transaction()

    def in_transaction(self) -> bool:
        return self._db.in_transaction()

    def migrations(self) -> list[tuple[str, datetime]]:
        return self._migrations.applied(self._db)

    # -- maintenance -----------------------------------------------------------------------------------
    def stats(self) -> StoreStats:
        def work(c: Any) -> StoreStats:
            live, archived = c.execute(
                "SELECT count(*) FILTER (WHERE archived_at IS NULL), count(*) FILTER (WHERE archived_at IS NOT NULL)"
                " FROM facts"
            ).fetchone()
            by_tier = c.execute("SELECT tier, count(*) FROM facts WHERE archived_at IS NULL GROUP BY tier").fetchall()
            by_category = c.execute(
                "SELECT category, count(*) FROM facts WHERE archived_at IS NULL GROUP BY category ORDER BY category"
            ).fetchall()
            return StoreStats(
                location=self._location(),
                size_bytes=self._size(c),
                live=int(live),
                archived=int(archived),
                by_tier={str(k): int(v) for k, v in by_tier},
                by_category={str(k): int(v) for k, v in by_category},
            )

        return self._db.read(work)

    def check(self, *, repair: bool = False, quick: bool = False) -> HealthReport:
        checks: dict[str, str] = {}
        repaired: list[str] = []
        checks["integrity"] = self._quick_integrity() if quick else self._integrity()
        if quick or checks["integrity"] != "ok":
            return HealthReport(ok=checks["integrity"] == "ok", checks=checks, repaired=())
        checks["fts"] = self._fts_consistency()
        if repair and checks["fts"] != "ok":
            repaired.append(self._repair_fts())
            checks["fts"] = self._fts_consistency()
        checks["versions"] = self._versions_check()
        if repair and checks["versions"] != "ok":
            n = self._db.write(lambda c: int(c.execute(_VERSIONS_REPAIR).rowcount))
            repaired.append(f"recorded the current state of {n} entries as their first version")
            checks["versions"] = self._versions_check()
        checks["migrations"] = ", ".join(name for name, _ in self.migrations()) or "none"
        ok = all(v == "ok" for k, v in checks.items() if k != "migrations")
        return HealthReport(ok=ok, checks=checks, repaired=tuple(repaired))

    def _versions_check(self) -> str:
        row = self._db.read(
            lambda c: c.execute(
                "SELECT count(*) FROM facts f WHERE NOT EXISTS (SELECT 1 FROM fact_versions x WHERE x.fact_id = f.id)"
            ).fetchone()
        )
        missing = int(row[0]) if row else 0
        return "ok" if not missing else f"{missing} entries have no version row"

    # -- portable rows (storage.portable) --------------------------------------------------------------
    def export_rows(self, table: str) -> Iterator[dict[str, Any]]:
        return self._rows.export_rows(table)

    def import_rows(self, table: str, rows: Iterable[dict[str, Any]]) -> int:
        return self._rows.import_rows(table, rows)

    def count_rows(self, table: str) -> int:
        return self._rows.count_rows(table)

    def delete_rows(self, table: str) -> int:
        return self._rows.delete_rows(table)

    def read_snapshot(self) -> AbstractContextManager[None]:
        return self._rows.read_snapshot()


_VERSIONS_REPAIR = (
    "INSERT INTO fact_versions (fact_id, version, change, recorded_at, content, category, tags,"
    " importance, metadata, archived)"
    " SELECT f.id, 1, 'housekeeping', coalesce(f.updated_at, f.created_at), f.content, f.category,"
    " f.tags, f.importance, f.metadata, f.archived_at IS NOT NULL FROM facts f"
    " WHERE NOT EXISTS (SELECT 1 FROM fact_versions x WHERE x.fact_id = f.id)"
)

"""Key-value memory and the knowledge graph on PostgreSQL: ``kv_items``, ``kg_entities``, ``kg_relations``.

Invariants:
- Every query names the agent: one agent never reads or changes another's keys, entities or relations.
- Every write is one ``PgDatabase.write`` transaction (joining the caller's ``Store.transaction()``). A put
  locks the key's row (``FOR UPDATE``) before it compares versions, and a new key goes in with
  ``ON CONFLICT DO NOTHING``, so two writers of one key at once serialise: the second sees the first's
  version (a compare-and-set of the same version fails; a plain put overwrites) and never errors.
- Keys order and compare by code point (the column is ``COLLATE "C"``, as SQLite's BINARY); a prefix matches
  by characters (``starts_with``), never by ``LIKE``, so ``%`` and ``_`` are plain text.
- JSON is jsonb, encoded by ``knowledge_codec.dumps`` with SQLite's rules (refused before any statement when
  it cannot be stored); a KV value of JSON null is SQL NULL.
- The hidden ``seq`` of entities and relations is insertion order: the tie-break of "most recently seen
  first" (newer first) and of "oldest first" (older first). NULL times sort as on SQLite: last when newest
  first, first when oldest first.
"""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Any

from reverie.errors import Conflict, NotFound
from reverie.storage.knowledge_codec import cas_refusal, dumps, fingerprint, search_needle
from reverie.storage.postgres.database import Conn, PgDatabase
from reverie.storage.postgres.rows import read_snapshot
from reverie.types import Entity, KvItem, Relation

# -- key-value memory ---------------------------------------------------------------------------------------
_KV_COLUMNS = "agent_id, key, value, created_at, updated_at, version, deleted_at"
# A live item of one agent under a prefix; parameters: agent_id, prefix, prefix. ``key >= prefix`` only lets
# the primary key bound the scan (code-point order: every key starting with the prefix is >= it).
_KV_LIVE_UNDER = "agent_id = %s AND key >= %s AND starts_with(key, %s) AND deleted_at IS NULL"


def _kv_item(row: tuple[Any, ...]) -> KvItem:
    return KvItem(
        agent_id=row[0],
        key=row[1],
        value=row[2],
        created_at=row[3],
        updated_at=row[4],
        version=int(row[5]),
        deleted_at=row[6],
    )


class PgKv:
    """``KvRepository`` on PostgreSQL."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    def get(self, agent_id: str, key: str) -> KvItem | None:
        row = self._db.read(
            lambda c: c.execute(
                f"SELECT {_KV_COLUMNS} FROM kv_items WHERE agent_id = %s AND key = %s AND deleted_at IS NULL",
                (agent_id, key),
            ).fetchone()
        )
        return None if row is None else _kv_item(row)

    def put(self, agent_id: str, key: str, value: Any, *, at: datetime, expected_version: int | None = None) -> KvItem:
        encoded = None if value is None else dumps(value, field="value")  # refused before any write

        def work(c: Conn) -> KvItem:
            if expected_version in (None, 0):
                cur = c.execute(
                    f"INSERT INTO kv_items ({_KV_COLUMNS}) VALUES (%s, %s, %s::jsonb, %s, %s, 1, NULL)"
                    " ON CONFLICT (agent_id, key) DO NOTHING",
                    (agent_id, key, encoded, at, at),
                )
                if cur.rowcount:
                    return KvItem(agent_id, key, value, at, at, 1)
            row = c.execute(
                "SELECT created_at, version, deleted_at FROM kv_items WHERE agent_id = %s AND key = %s FOR UPDATE",
                (agent_id, key),
            ).fetchone()
            live = None if row is None or row[2] is not None else int(row[1])
            refusal = cas_refusal(key, live, expected_version)
            if refusal is not None:
                raise Conflict(refusal)
            if row is None:  # purged between the insert and the lock: nothing to overwrite any more
                raise Conflict(f"key {key!r} changed while it was being written; try again")
            # An overwrite keeps created_at; a revived key starts a new life at ``at``, its version goes on.
            created = row[0] if live is not None else at
            version = int(row[1]) + 1
            c.execute(
                "UPDATE kv_items SET value = %s::jsonb, created_at = %s, updated_at = %s, version = %s,"
                " deleted_at = NULL WHERE agent_id = %s AND key = %s",
                (encoded, created, at, version, agent_id, key),
            )
            return KvItem(agent_id, key, value, created, at, version)

        return self._db.write(work)

    def delete(self, agent_id: str, key: str, *, at: datetime) -> bool:
        def work(c: Conn) -> bool:
            cur = c.execute(
                "UPDATE kv_items SET deleted_at = %s, updated_at = %s, version = version + 1"
                " WHERE agent_id = %s AND key = %s AND deleted_at IS NULL",
                (at, at, agent_id, key),
            )
            return cur.rowcount > 0

        return self._db.write(work)

    def list(
        self, agent_id: str, prefix: str = "", *, limit: int = 100, after: str | None = None
    ) -> builtins.list[KvItem]:
        sql = f"SELECT {_KV_COLUMNS} FROM kv_items WHERE {_KV_LIVE_UNDER}"
        params: builtins.list[Any] = [agent_id, prefix, prefix]
        if after is not None:
            sql += " AND key > %s"
            params.append(after)
        sql += " ORDER BY key LIMIT %s"
        params.append(max(limit, 0))
        rows = self._db.read(lambda c: c.execute(sql, params).fetchall())
        return [_kv_item(r) for r in rows]

    def count(self, agent_id: str, prefix: str = "") -> int:
        row = self._db.read(
            lambda c: c.execute(
                f"SELECT count(*) FROM kv_items WHERE {_KV_LIVE_UNDER}", (agent_id, prefix, prefix)
            ).fetchone()
        )
        return int(row[0]) if row else 0

    def purge_deleted(self, before: datetime) -> int:
        def work(c: Conn) -> int:
            cur = c.execute("DELETE FROM kv_items WHERE deleted_at IS NOT NULL AND deleted_at <= %s", (before,))
            return int(cur.rowcount)

        return self._db.write(work)


# -- the knowledge graph ------------------------------------------------------------------------------------
_ENTITY_COLUMNS = (
    "agent_id, entity_id, type, name, key, properties, created_at, updated_at, last_seen_at, sources, merged_into,"
    " archived_at"
)
_ENTITY_VALUES = "%s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s::jsonb, %s, %s"
_RELATION_COLUMNS = (
    "agent_id, relation_id, source_id, relation, target_id, properties, valid_from, invalid_at, created_at, sources"
)
_RELATION_VALUES = "%s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s::jsonb"
_LIVE = "merged_into IS NULL AND archived_at IS NULL"
_RECENT_FIRST = "ORDER BY last_seen_at DESC NULLS LAST, seq DESC"
_OLDEST_FIRST = "ORDER BY created_at ASC NULLS FIRST, seq"


def _entity_params(e: Entity) -> tuple[Any, ...]:
    return (
        e.agent_id,
        e.entity_id,
        e.type,
        e.name,
        e.key,
        dumps(e.properties, field="properties"),
        e.created_at,
        e.updated_at,
        e.last_seen_at,
        dumps(list(e.sources), field="sources"),
        e.merged_into,
        e.archived_at,
    )


def _entity(row: tuple[Any, ...]) -> Entity:
    return Entity(
        agent_id=row[0],
        entity_id=row[1],
        type=row[2],
        name=row[3],
        key=row[4],
        properties=row[5],
        created_at=row[6],
        updated_at=row[7],
        last_seen_at=row[8],
        sources=tuple(row[9]),
        merged_into=row[10],
        archived_at=row[11],
    )


def _relation_params(r: Relation) -> tuple[Any, ...]:
    return (
        r.agent_id,
        r.relation_id,
        r.source_id,
        r.relation,
        r.target_id,
        dumps(r.properties, field="properties"),
        r.valid_from,
        r.invalid_at,
        r.created_at,
        dumps(list(r.sources), field="sources"),
    )


def _relation(row: tuple[Any, ...]) -> Relation:
    return Relation(
        agent_id=row[0],
        relation_id=row[1],
        source_id=row[2],
        relation=row[3],
        target_id=row[4],
        properties=row[5],
        valid_from=row[6],
        invalid_at=row[7],
        created_at=row[8],
        sources=tuple(row[9]),
    )


class PgGraph:
    """``GraphRepository`` on PostgreSQL."""

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    def _entities(self, where: str, params: builtins.list[Any], tail: str = "") -> builtins.list[Entity]:
        sql = f"SELECT {_ENTITY_COLUMNS} FROM kg_entities WHERE {where} {tail}"
        return [_entity(r) for r in self._db.read(lambda c: c.execute(sql, params).fetchall())]

    def _relations(self, where: str, params: builtins.list[Any], tail: str = "") -> builtins.list[Relation]:
        sql = f"SELECT {_RELATION_COLUMNS} FROM kg_relations WHERE {where} {tail}"
        return [_relation(r) for r in self._db.read(lambda c: c.execute(sql, params).fetchall())]

    # -- entities
    def add_entity(self, entity: Entity) -> None:
        params = _entity_params(entity)
        self._db.write(
            lambda c: c.execute(f"INSERT INTO kg_entities ({_ENTITY_COLUMNS}) VALUES ({_ENTITY_VALUES})", params)
        )

    def write_entity(self, entity: Entity) -> None:
        p = _entity_params(entity)

        def work(c: Conn) -> int:
            cur = c.execute(
                "UPDATE kg_entities SET type = %s, name = %s, key = %s, properties = %s::jsonb, created_at = %s,"
                " updated_at = %s, last_seen_at = %s, sources = %s::jsonb, merged_into = %s, archived_at = %s"
                " WHERE agent_id = %s AND entity_id = %s",
                (*p[2:], p[0], p[1]),
            )
            return int(cur.rowcount)

        if not self._db.write(work):
            raise NotFound(f"no entity {entity.entity_id!r} for agent {entity.agent_id!r}")

    def get_entity(self, agent_id: str, entity_id: str) -> Entity | None:
        found = self._entities("agent_id = %s AND entity_id = %s", [agent_id, entity_id])
        return found[0] if found else None

    def find_entity(self, agent_id: str, type: str, key: str) -> Entity | None:
        found = self._entities("agent_id = %s AND type = %s AND key = %s", [agent_id, type, key])
        return found[0] if found else None

    def entities_by_key(self, agent_id: str, key: str) -> builtins.list[Entity]:
        return self._entities(f"agent_id = %s AND key = %s AND {_LIVE}", [agent_id, key], _RECENT_FIRST)

    def list_entities(
        self, agent_id: str, *, type: str | None = None, limit: int = 100, include_archived: bool = False
    ) -> builtins.list[Entity]:
        where = "agent_id = %s AND merged_into IS NULL"
        params: builtins.list[Any] = [agent_id]
        if not include_archived:
            where += " AND archived_at IS NULL"
        if type is not None:
            where += " AND type = %s"
            params.append(type)
        return self._entities(where, [*params, max(limit, 0)], f"{_RECENT_FIRST} LIMIT %s")

    def search_entities(self, agent_id: str, text: str, *, limit: int = 20) -> builtins.list[Entity]:
        # The key is the folded name, so a folded needle in the key is a case-insensitive match on the name
        # (no lower(): its folding depends on the server's collation).
        needle = search_needle(text)
        return self._entities(
            f"agent_id = %s AND {_LIVE} AND (strpos(key, %s) > 0 OR strpos(name, %s) > 0)",
            [agent_id, needle, text, needle, max(limit, 0)],
            "ORDER BY key = %s DESC, last_seen_at DESC NULLS LAST, seq DESC LIMIT %s",
        )

    def entities_of_sources(self, agent_id: str, entry_ids: builtins.list[str]) -> builtins.list[Entity]:
        if not entry_ids:
            return []
        return self._entities(
            f"agent_id = %s AND {_LIVE} AND sources ?| %s::text[]", [agent_id, list(entry_ids)], _RECENT_FIRST
        )

    # -- relations
    def add_relation(self, relation: Relation) -> None:
        params = _relation_params(relation)
        self._db.write(
            lambda c: c.execute(f"INSERT INTO kg_relations ({_RELATION_COLUMNS}) VALUES ({_RELATION_VALUES})", params)
        )

    def write_relation(self, relation: Relation) -> None:
        p = _relation_params(relation)

        def work(c: Conn) -> int:
            cur = c.execute(
                "UPDATE kg_relations SET source_id = %s, relation = %s, target_id = %s, properties = %s::jsonb,"
                " valid_from = %s, invalid_at = %s, created_at = %s, sources = %s::jsonb"
                " WHERE agent_id = %s AND relation_id = %s",
                (*p[2:], p[0], p[1]),
            )
            return int(cur.rowcount)

        if not self._db.write(work):
            raise NotFound(f"no relation {relation.relation_id!r} for agent {relation.agent_id!r}")

    def get_relation(self, agent_id: str, relation_id: str) -> Relation | None:
        found = self._relations("agent_id = %s AND relation_id = %s", [agent_id, relation_id])
        return found[0] if found else None

    def relations(
        self,
        agent_id: str,
        *,
        entity_id: str | None = None,
        source_id: str | None = None,
        relation: str | None = None,
        target_id: str | None = None,
        include_invalid: bool = False,
        limit: int = 1000,
    ) -> builtins.list[Relation]:
        where = "agent_id = %s"
        params: builtins.list[Any] = [agent_id]
        if entity_id is not None:
            where += " AND (source_id = %s OR target_id = %s)"
            params += [entity_id, entity_id]
        for column, value in (("source_id", source_id), ("relation", relation), ("target_id", target_id)):
            if value is not None:
                where += f" AND {column} = %s"
                params.append(value)
        if not include_invalid:
            where += " AND invalid_at IS NULL"
        return self._relations(where, [*params, max(limit, 0)], f"{_OLDEST_FIRST} LIMIT %s")

    def neighbours(
        self, agent_id: str, entity_ids: builtins.list[str], *, include_invalid: bool = False
    ) -> builtins.list[Relation]:
        if not entity_ids:
            return []
        ids = list(entity_ids)
        where = "agent_id = %s AND (source_id = ANY(%s::text[]) OR target_id = ANY(%s::text[]))"
        if not include_invalid:
            where += " AND invalid_at IS NULL"
        return self._relations(where, [agent_id, ids, ids], _OLDEST_FIRST)

    def fingerprint(self, agent_id: str) -> str:
        with read_snapshot(self._db):  # the entities and the relations of one state
            entities = self._entities(f"agent_id = %s AND {_LIVE}", [agent_id])
            relations = self._relations("agent_id = %s AND invalid_at IS NULL", [agent_id])
        return fingerprint(entities, relations)

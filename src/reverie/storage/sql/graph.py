"""The knowledge graph (``GraphRepository``, ``storage.graph``), written once for both backends: the
``kg_entities`` and ``kg_relations`` tables.

Invariants:
- Every query names the agent: one agent never reads or changes another's entities or relations.
- Every write is one ``Database.write`` transaction (joining the caller's ``Store.transaction()``).
- JSON (properties, sources) is encoded by ``kv_codec.dumps`` with one set of rules, refused before any
  statement when it cannot be stored on both backends. Timestamps go in and come out in UTC; None stays NULL.
- The hidden ``seq`` of entities and relations is insertion order: the tie-break of "most recently seen
  first" (newer first) and of "oldest first" (older first). NULL times sort the same on both backends:
  last when newest first, first when oldest first (spelled out: ``NULLS LAST`` / ``NULLS FIRST``).
- A substring search compares characters (``Dialect.contains``), never ``LIKE`` or a server-side ``lower()``
  (whose folding depends on the collation): the key is the folded name, searched with a folded needle.
- The fingerprint reads entities and relations in one read snapshot, so it describes one state.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from reverie.errors import NotFound
from reverie.storage.graph_codec import fingerprint, search_needle
from reverie.storage.kv_codec import dumps
from reverie.storage.sql.dialect import Dialect, SqlDatabase
from reverie.types import Entity, Relation

_ENTITY_COLUMNS = (
    "agent_id, entity_id, type, name, key, properties, created_at, updated_at, last_seen_at, sources, merged_into,"
    " archived_at"
)
_RELATION_COLUMNS = (
    "agent_id, relation_id, source_id, relation, target_id, properties, valid_from, invalid_at, created_at, sources"
)
_LIVE = "merged_into IS NULL AND archived_at IS NULL"
_RECENT_FIRST = "ORDER BY last_seen_at DESC NULLS LAST, seq DESC"
_OLDEST_FIRST = "ORDER BY created_at ASC NULLS FIRST, seq"


def _marks(n: int) -> str:
    return ", ".join("?" for _ in range(n))


class SqlGraph:
    """``GraphRepository`` over either backend. ``snapshot`` opens a read snapshot on this thread (the
    backend's ``read_snapshot``)."""

    def __init__(self, db: SqlDatabase, dialect: Dialect, snapshot: Callable[[], AbstractContextManager[None]]) -> None:
        self._db = db
        self._d = dialect
        self._snapshot = snapshot

    # -- rows
    def _entity_params(self, e: Entity) -> tuple[Any, ...]:
        d = self._d
        return (
            e.agent_id,
            e.entity_id,
            e.type,
            e.name,
            e.key,
            d.json_encoded(dumps(e.properties, field="properties")),
            d.ts_or_none(e.created_at),
            d.ts_or_none(e.updated_at),
            d.ts_or_none(e.last_seen_at),
            d.json_encoded(dumps(list(e.sources), field="sources")),
            e.merged_into,
            d.ts_or_none(e.archived_at),
        )

    def _entity(self, row: tuple[Any, ...]) -> Entity:
        d = self._d
        return Entity(
            agent_id=row[0],
            entity_id=row[1],
            type=row[2],
            name=row[3],
            key=row[4],
            properties=d.json_out(row[5]),
            created_at=d.ts_out_or_none(row[6]),
            updated_at=d.ts_out_or_none(row[7]),
            last_seen_at=d.ts_out_or_none(row[8]),
            sources=tuple(d.json_out(row[9])),
            merged_into=row[10],
            archived_at=d.ts_out_or_none(row[11]),
        )

    def _relation_params(self, r: Relation) -> tuple[Any, ...]:
        d = self._d
        return (
            r.agent_id,
            r.relation_id,
            r.source_id,
            r.relation,
            r.target_id,
            d.json_encoded(dumps(r.properties, field="properties")),
            d.ts_or_none(r.valid_from),
            d.ts_or_none(r.invalid_at),
            d.ts_or_none(r.created_at),
            d.json_encoded(dumps(list(r.sources), field="sources")),
        )

    def _relation(self, row: tuple[Any, ...]) -> Relation:
        d = self._d
        return Relation(
            agent_id=row[0],
            relation_id=row[1],
            source_id=row[2],
            relation=row[3],
            target_id=row[4],
            properties=d.json_out(row[5]),
            valid_from=d.ts_out_or_none(row[6]),
            invalid_at=d.ts_out_or_none(row[7]),
            created_at=d.ts_out_or_none(row[8]),
            sources=tuple(d.json_out(row[9])),
        )

    def _entities(self, where: str, params: builtins.list[Any], tail: str = "") -> builtins.list[Entity]:
        statement = self._d.sql(f"SELECT {_ENTITY_COLUMNS} FROM kg_entities WHERE {where} {tail}")
        return [self._entity(r) for r in self._db.read(lambda c: c.execute(statement, params).fetchall())]

    def _relations(self, where: str, params: builtins.list[Any], tail: str = "") -> builtins.list[Relation]:
        statement = self._d.sql(f"SELECT {_RELATION_COLUMNS} FROM kg_relations WHERE {where} {tail}")
        return [self._relation(r) for r in self._db.read(lambda c: c.execute(statement, params).fetchall())]

    def _update(self, statement: str, params: tuple[Any, ...]) -> int:
        statement = self._d.sql(statement)
        return self._db.write(lambda c: int(c.execute(statement, params).rowcount))

    # -- entities
    def add_entity(self, entity: Entity) -> None:
        params = self._entity_params(entity)
        statement = self._d.sql(f"INSERT INTO kg_entities ({_ENTITY_COLUMNS}) VALUES ({_marks(12)})")
        self._db.write(lambda c: c.execute(statement, params))

    def write_entity(self, entity: Entity) -> None:
        p = self._entity_params(entity)
        changed = self._update(
            "UPDATE kg_entities SET type = ?, name = ?, key = ?, properties = ?, created_at = ?, updated_at = ?,"
            " last_seen_at = ?, sources = ?, merged_into = ?, archived_at = ? WHERE agent_id = ? AND entity_id = ?",
            (*p[2:], p[0], p[1]),
        )
        if not changed:
            raise NotFound(f"no entity {entity.entity_id!r} for agent {entity.agent_id!r}")

    def get_entity(self, agent_id: str, entity_id: str) -> Entity | None:
        found = self._entities("agent_id = ? AND entity_id = ?", [agent_id, entity_id])
        return found[0] if found else None

    def find_entity(self, agent_id: str, type: str, key: str) -> Entity | None:
        found = self._entities("agent_id = ? AND type = ? AND key = ?", [agent_id, type, key])
        return found[0] if found else None

    def entities_by_key(self, agent_id: str, key: str) -> builtins.list[Entity]:
        return self._entities(f"agent_id = ? AND key = ? AND {_LIVE}", [agent_id, key], _RECENT_FIRST)

    def list_entities(
        self, agent_id: str, *, type: str | None = None, limit: int = 100, include_archived: bool = False
    ) -> builtins.list[Entity]:
        where = "agent_id = ? AND merged_into IS NULL"
        params: builtins.list[Any] = [agent_id]
        if not include_archived:
            where += " AND archived_at IS NULL"
        if type is not None:
            where += " AND type = ?"
            params.append(type)
        return self._entities(where, [*params, max(limit, 0)], f"{_RECENT_FIRST} LIMIT ?")

    def entities_page(self, agent_id: str, *, type: str | None, after: str | None, limit: int) -> builtins.list[Entity]:
        # Keyset on the id (code-point order on both backends), which never changes: a walk is exact.
        c = self._d.collate_c
        where, params = f"agent_id = ? AND {_LIVE}", [agent_id]
        if type is not None:
            where += " AND type = ?"
            params.append(type)
        if after is not None:
            where += f" AND entity_id{c} > ?"
            params.append(after)
        return self._entities(where, [*params, max(limit, 0)], f"ORDER BY entity_id{c} LIMIT ?")

    def search_entities(self, agent_id: str, text: str, *, limit: int = 20) -> builtins.list[Entity]:
        # The key is the folded name, so a folded needle in the key is a case-insensitive match on the name.
        needle = search_needle(text)
        d = self._d
        return self._entities(
            f"agent_id = ? AND {_LIVE} AND ({d.contains('key', '?')} OR {d.contains('name', '?')})",
            [agent_id, needle, text, needle, max(limit, 0)],
            "ORDER BY key = ? DESC, last_seen_at DESC NULLS LAST, seq DESC LIMIT ?",
        )

    def entities_of_sources(self, agent_id: str, entry_ids: builtins.list[str]) -> builtins.list[Entity]:
        if not entry_ids:
            return []
        return self._entities(
            f"agent_id = ? AND {_LIVE} AND {self._d.json_has_any('kg_entities.sources')}",
            [agent_id, self._d.text_list(entry_ids)],
            _RECENT_FIRST,
        )

    # -- relations
    def add_relation(self, relation: Relation) -> None:
        params = self._relation_params(relation)
        statement = self._d.sql(f"INSERT INTO kg_relations ({_RELATION_COLUMNS}) VALUES ({_marks(10)})")
        self._db.write(lambda c: c.execute(statement, params))

    def write_relation(self, relation: Relation) -> None:
        p = self._relation_params(relation)
        changed = self._update(
            "UPDATE kg_relations SET source_id = ?, relation = ?, target_id = ?, properties = ?, valid_from = ?,"
            " invalid_at = ?, created_at = ?, sources = ? WHERE agent_id = ? AND relation_id = ?",
            (*p[2:], p[0], p[1]),
        )
        if not changed:
            raise NotFound(f"no relation {relation.relation_id!r} for agent {relation.agent_id!r}")

    def get_relation(self, agent_id: str, relation_id: str) -> Relation | None:
        found = self._relations("agent_id = ? AND relation_id = ?", [agent_id, relation_id])
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
        where, params = _relation_filter(agent_id, entity_id, source_id, relation, target_id, include_invalid)
        return self._relations(where, [*params, max(limit, 0)], f"{_OLDEST_FIRST} LIMIT ?")

    def relations_page(
        self,
        agent_id: str,
        *,
        entity_id: str | None = None,
        source_id: str | None = None,
        relation: str | None = None,
        target_id: str | None = None,
        include_invalid: bool = False,
        after: str | None,
        limit: int,
    ) -> builtins.list[Relation]:
        # Keyset on the id (code-point order on both backends), which never changes: a walk is exact.
        c = self._d.collate_c
        where, params = _relation_filter(agent_id, entity_id, source_id, relation, target_id, include_invalid)
        if after is not None:
            where += f" AND relation_id{c} > ?"
            params.append(after)
        return self._relations(where, [*params, max(limit, 0)], f"ORDER BY relation_id{c} LIMIT ?")

    def neighbours(
        self, agent_id: str, entity_ids: builtins.list[str], *, include_invalid: bool = False
    ) -> builtins.list[Relation]:
        if not entity_ids:
            return []
        d = self._d
        ids = d.text_list(entity_ids)
        where = f"agent_id = ? AND ({d.in_list('source_id')} OR {d.in_list('target_id')})"
        if not include_invalid:
            where += " AND invalid_at IS NULL"
        return self._relations(where, [agent_id, ids, ids], _OLDEST_FIRST)

    def fingerprint(self, agent_id: str) -> str:
        with self._snapshot():  # the entities and the relations of one state
            entities = self._entities(f"agent_id = ? AND {_LIVE}", [agent_id])
            relations = self._relations("agent_id = ? AND invalid_at IS NULL", [agent_id])
        return fingerprint(entities, relations)


def _relation_filter(
    agent_id: str,
    entity_id: str | None,
    source_id: str | None,
    relation: str | None,
    target_id: str | None,
    include_invalid: bool,
) -> tuple[str, builtins.list[Any]]:
    """The WHERE clause and its parameters of a relation query: every filter given (``entity_id``: either end)."""
    where = "agent_id = ?"
    params: builtins.list[Any] = [agent_id]
    if entity_id is not None:
        where += " AND (source_id = ? OR target_id = ?)"
        params += [entity_id, entity_id]
    for column, value in (("source_id", source_id), ("relation", relation), ("target_id", target_id)):
        if value is not None:
            where += f" AND {column} = ?"
            params.append(value)
    if not include_invalid:
        where += " AND invalid_at IS NULL"
    return where, params

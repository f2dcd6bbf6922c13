"""Moving a store between backends: a store built through the engine goes SQLite -> PostgreSQL -> SQLite
with identical content; the PostgreSQL copy searches; ``reverie copy`` and ``reverie migrate``; SQLite's
damaged dream rows on export; a PostgreSQL backup restored into SQLite and back."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

import reverie
from _postgres import PgServer, with_database
from reverie import Scope
from reverie.cli import app
from reverie.clock import FakeClock
from reverie.core.text import fts_match, query_terms
from reverie.errors import StorageError
from reverie.storage import open_store, store_url
from reverie.storage.base import FactFilter, LedgerStamp, Store
from reverie.storage.portable import TABLES, copy
from reverie.storage.postgres.migrations import MIGRATIONS as PG_MIGRATIONS
from reverie.storage.sqlite.schema import MIGRATIONS
from reverie.types import Entity, Evidence, Relation, UsageRow

runner = CliRunner()
UNICODE = [
    "Café naïve façade — “quoted” …",
    "日本語のテキスト、中文文本、한국어",
    "emoji 🎉🧠 family 👩‍👩‍👧 flag 🇵🇹",
    "e\u0301 (decomposed) vs \u00e9 (composed)",
]


def dump(store: Store) -> dict[str, list[dict[str, Any]]]:
    return {t.name: list(store.export_rows(t.name)) for t in TABLES}


def build(home: Path, clock: FakeClock) -> Path:
    """A store with a row in every portable table, made the way the engine makes them. Returns its file."""
    # Extraction on demand only: the saves stay queued (a row in graph_extraction), and the graph rows below
    # are the only ones.
    options = {"embedding": {"provider": "hash", "background": False}, "graph": {"extraction_background": False}}
    with reverie.open(home, clock=clock, **options) as rv:
        lisbon = rv.memory.save("The user lives in Lisbon", category="user/location", tags=["travel", "home"])
        for text in UNICODE:
            rv.memory.save(text, category="unicode", metadata={"note": text[:5], "n": [1, 2.5]})
        rv.memory.save("A private note of user one", scope=Scope(user_id="u1"))
        edited = rv.memory.save("The meeting is on Monday")
        rv.memory.edit(edited.id, content="The meeting moved to Tuesday", tags=["calendar"])
        doomed = rv.memory.save("A fact archived long ago")
        rv.memory.archive(doomed.id)
        kept = rv.memory.save("An archived fact that stays")
        clock.advance(days=120)
        rv.purge()  # doomed goes: a purge log row
        rv.memory.archive(kept.id)
        rv.memory.save("A fact from after the purge", category="later")
        rv.embed_pending()
        rv.conversation.add_turn("s1", "user", "Where do I live? 🏠", create=True)
        rv.conversation.add_turn(
            "s1",
            "assistant",
            "",
            tool_calls=[{"id": "c1", "type": "function", "function": {"name": "memory_search", "arguments": "{}"}}],
        )
        rv.conversation.add_turn("s1", "tool", "Lisbon", tool_call_id="c1")
        rv.working.for_namespace("session/s1").save("draft", "half a thought ✓", tags=["wip"])
        rv.working.for_namespace("session/s1").save("other", "second entry", category="notes")
        rv.keys.create("ci", agent_id="default", scopes=["memory_read"])
        now = clock.now()
        for purpose, ok in (("expansion", True), ("dream", False)):
            rv.store.usage.add(UsageRow(now, "default", "openai", "gpt-x", purpose, 120, 7, 0.00042, ok))
        rv.dream.run("default")
        rv.store.dream.stamp(LedgerStamp("default", "consolidation", now, fingerprint="f00d"))
        run_id = rv.store.dream.runs("default")[0].run_id
        rv.store.dream.add_evidence([Evidence(run_id, lisbon.id, edited.id, now)])
        rv.store.kv.put("default", "user:preference:théme", {"theme": "dark", "n": [1, 2.5]}, at=now)
        rv.store.kv.put("default", "note:1", None, at=now)
        rv.store.kv.delete("default", "note:1", at=now)
        user = Entity("default", "e-user", "person", "The user", "the user", {"ü": "✓"}, now, now, now, (lisbon.id,))
        city = Entity("default", "e-city", "place", "Lisbon", "lisbon", created_at=now, sources=(lisbon.id,))
        for entity in (user, city, Entity("default", "e-old", "thing", "lisbon", "lisbon", merged_into="e-city")):
            rv.store.graph.add_entity(entity)
        rv.store.graph.add_relation(Relation("default", "r-1", "e-user", "lives_in", "e-city", {"since": 2020}))
        rv.store.graph.add_relation(
            Relation("default", "r-0", "e-user", "lived_in", "e-city", invalid_at=now, sources=(edited.id,))
        )
        rv.skills.save("default", "mcp/email", "Send mail ✓", "Confirm the recipient, then send.", see_also=["mcp/x"])
        rv.skills.record_usage("default", "s1", ["mcp/email"])
        rv.feedback.record(
            "default", "session_summary", "s1", rating="poor", entry_ids=[lisbon.id], skill_names=["mcp/email"]
        )
        rv.executions.record("default", "Send mail ✓", False, steps=[{"name": "send", "ok": False, "error": "bounced"}])
        rv.tool_calls.record("default", "memory_search", True, arguments={"query": ""}, duration_ms=3.5)
        assert rv.context.build("s1", "Where do I live?").injected  # the delta filter holds what it was given
        path = Path(rv.store.url.removeprefix("sqlite:///"))
    return path


@pytest.fixture
def source(tmp_path: Path) -> Path:
    return build(tmp_path / "home", FakeClock())


def test_a_store_round_trips_sqlite_postgres_sqlite_with_identical_content(
    source: Path, pg_url: str, tmp_path: Path
) -> None:
    now = FakeClock().now()
    with closing(open_store(store_url(source), now=now)) as src:
        original = dump(src)
        assert all(original[t.name] for t in TABLES), [t.name for t in TABLES if not original[t.name]]
        with closing(open_store(pg_url, now=now)) as pg:
            counts = copy(src, pg)
            assert counts == {t.name: len(original[t.name]) for t in TABLES}
            assert dump(pg) == original
            with closing(open_store(store_url(tmp_path / "back.db"), now=now)) as back:
                copy(pg, back)
                assert dump(back) == original
    # Byte-equal vectors, exact timestamps and versions: the dicts above compare them; spot-check the types.
    vector = original["fact_vectors"][0]["vector"]
    assert isinstance(vector, bytes) and len(vector) == 4 * original["fact_vectors"][0]["dim"]
    assert any(v["version"] == 2 for v in original["fact_versions"])


def test_the_postgres_copy_searches(source: Path, pg_url: str, tmp_path: Path) -> None:
    clock = FakeClock()
    with (
        closing(open_store(store_url(source), now=clock.now())) as src,
        closing(open_store(pg_url, now=clock.now())) as pg,
    ):
        copy(src, pg)
        expected_ids = {r["id"] for r in src.export_rows("facts") if r["agent_id"] == "default"}
        snapshot = pg.facts.text_snapshot("default")
        assert {fact_id for fact_id, _ in snapshot.rows} == expected_ids
        assert snapshot.watermark > 0
        vectors = pg.vectors.snapshot("default", next(iter(pg.vectors.counts())))
        assert len(vectors.vectors) == src.count_rows("fact_vectors")
        assert pg.check().ok
        flt = FactFilter(scope=Scope(), now=clock.now() + timedelta(days=200))
        match = fts_match(query_terms("lisbon"))
        assert match is not None
        assert [e.content for e, _ in pg.facts.search(match, flt, 10)] == ["The user lives in Lisbon"]
    later = FakeClock(clock.now() + timedelta(days=121))  # just after the source was built
    with reverie.open(
        tmp_path / "pg-home", clock=later, store={"url": pg_url}, embedding={"provider": "hash", "background": False}
    ) as rv:
        hits = rv.memory.search("Where does the user live? Lisbon")
        assert hits and hits[0].entry.content == "The user lives in Lisbon"
        assert rv.memory.history(hits[0].entry.id)[0].content == "The user lives in Lisbon"
        assert [t.content for t in rv.conversation.live("s1")][0] == "Where do I live? 🏠"


def test_a_postgres_backup_restores_into_sqlite_and_back(source: Path, pg_url: str, tmp_path: Path) -> None:
    now = FakeClock().now()
    with closing(open_store(store_url(source), now=now)) as src, closing(open_store(pg_url, now=now)) as pg:
        original = dump(src)
        copy(src, pg)
        pg.backup(tmp_path / "pg.bak")
        assert not list(tmp_path.glob("pg.bak.partial*"))
        with closing(open_store(store_url(tmp_path / "restored.db"), now=now)) as restored:
            restored.restore_backup(tmp_path / "pg.bak")
            assert dump(restored) == original
        pg.import_rows("store_meta", [{"key": "written after the backup", "value": "x"}])
        pg.restore_backup(source)  # an SQLite store file is a portable backup too
        assert dump(pg) == original


# -- the catalog -----------------------------------------------------------------------------------------
DERIVED = {"seq", "search_text"}  # ordering and PostgreSQL's full-text vector: never copied
NOT_PORTABLE = {"fact_log", "vector_log", "schema_migrations", "sqlite_sequence"}


def test_the_catalog_matches_both_schemas_column_for_column(tmp_path: Path, pg_url: str) -> None:
    catalog = {t.name: set(t.names) for t in TABLES}
    open_store(store_url(tmp_path / "schema.db"), now=FakeClock().now()).close()
    with closing(sqlite3.connect(tmp_path / "schema.db")) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        sqlite_tables = {
            n: {c[1] for c in conn.execute(f"PRAGMA table_info({n})")} - ({"seq"} if n != "working_entries" else set())
            for n in names
            if n not in NOT_PORTABLE and not n.startswith("facts_fts")
        }
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()"
        ).fetchall()
    pg_tables: dict[str, set[str]] = {}
    for name, column in rows:
        if name not in NOT_PORTABLE and (column not in DERIVED or (name, column) == ("working_entries", "seq")):
            pg_tables.setdefault(name, set()).add(column)
    assert sqlite_tables == catalog
    assert pg_tables == catalog


# -- damaged SQLite rows ---------------------------------------------------------------------------------
def _raw(path: Path, sql: str) -> None:
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(sql)


def test_an_unreadable_ledger_stamp_is_left_out_and_an_unreadable_lease_reads_as_none(
    source: Path, tmp_path: Path
) -> None:
    _raw(source, "UPDATE dream_ledger SET stamped_at = 'not a time'")
    _raw(source, "UPDATE dream_locks SET expires_at = '2026-01-01T09:00:00', holder = 'gone'")  # naive
    now = FakeClock().now()
    with closing(open_store(store_url(source), now=now)) as src:
        assert list(src.export_rows("dream_ledger")) == []
        assert [(r["holder"], r["expires_at"]) for r in src.export_rows("dream_locks")] == [("gone", None)]
        with closing(open_store(store_url(tmp_path / "copy.db"), now=now)) as dst:
            counts = copy(src, dst)
            assert counts["dream_ledger"] == 0 and counts["dream_locks"] == 1


def test_an_unreadable_timestamp_elsewhere_stops_the_copy_naming_the_column(source: Path, tmp_path: Path) -> None:
    _raw(source, "UPDATE facts SET last_seen_at = 'garbage' WHERE category = 'later'")
    now = FakeClock().now()
    with (
        closing(open_store(store_url(source), now=now)) as src,
        closing(open_store(store_url(tmp_path / "copy.db"), now=now)) as dst,
    ):
        with pytest.raises(StorageError, match="facts.last_seen_at"):
            copy(src, dst)
        assert all(dst.count_rows(t.name) == 0 for t in TABLES)


# -- the CLI ---------------------------------------------------------------------------------------------
def cli(home: Path, *args: str, code: int = 0) -> str:
    result = runner.invoke(app, ["--home", str(home), *args])
    assert result.exit_code == code, (result.output, result.stderr, result.exception)
    return result.stdout if code == 0 else result.stderr


def test_reverie_copy_moves_a_store_to_postgres_and_back(source: Path, pg_url: str, tmp_path: Path) -> None:
    home = tmp_path / "cli-home"
    out = json.loads(cli(home, "copy", str(source), pg_url, "--json"))
    now = FakeClock().now()
    with closing(open_store(store_url(source), now=now)) as src:
        expected = {t.name: src.count_rows(t.name) for t in TABLES}
        original = dump(src)
    assert out["rows"] == expected and out["total"] == sum(expected.values())
    back = tmp_path / "back.db"
    text = cli(home, "copy", pg_url, str(back))
    assert "fact_vectors" in text and "total" in text
    with closing(open_store(store_url(back), now=now)) as restored:
        assert dump(restored) == original


def test_reverie_copy_refuses_a_non_empty_destination_and_writes_nothing(source: Path, tmp_path: Path) -> None:
    home = tmp_path / "cli-home"
    target = tmp_path / "target.db"
    now = FakeClock().now()
    with closing(open_store(store_url(target), now=now)) as dst:
        dst.import_rows("store_meta", [{"key": "mine", "value": "already here"}])
    error = cli(home, "copy", str(source), str(target), code=1)
    assert "not empty" in error and "store_meta" in error
    with closing(open_store(store_url(target), now=now)) as dst:
        assert {t.name: dst.count_rows(t.name) for t in TABLES if dst.count_rows(t.name)} == {"store_meta": 1}


def test_reverie_copy_refuses_a_missing_source_without_creating_it(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.db"
    error = cli(tmp_path / "cli-home", "copy", str(missing), str(tmp_path / "dst.db"), code=1)
    assert "no store" in error
    assert not missing.exists() and not (tmp_path / "dst.db").exists()


def test_reverie_migrate_dry_run_lists_without_applying(tmp_path: Path) -> None:
    home = tmp_path / "home"
    names = [name for name, _ in MIGRATIONS]
    dry = json.loads(cli(home, "migrate", "--dry-run", "--json"))
    assert dry["pending"] == names and dry["dry_run"] is True
    assert not (home / "reverie.db").exists()
    assert "0001_initial" in cli(home, "migrate", "--dry-run")
    applied = json.loads(cli(home, "migrate", "--json"))
    assert applied["applied_now"] == names
    assert [m["name"] for m in applied["migrations"]] == names
    assert json.loads(cli(home, "migrate", "--dry-run", "--json"))["pending"] == []
    assert "up to date" in cli(home, "migrate")


def test_reverie_migrate_an_older_sqlite_file_applies_only_the_missing_ones(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    # A file whose schema table lists every migration but the last: the dry run names the last only.
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        stamp = "2026-01-01T00:00:00.000000Z"
        conn.executemany("INSERT INTO schema_migrations VALUES (?, ?)", [(n, stamp) for n, _ in MIGRATIONS[:-1]])
    dry = json.loads(cli(tmp_path / "home", "migrate", "--store", str(path), "--dry-run", "--json"))
    assert dry["pending"] == [MIGRATIONS[-1][0]]


def test_reverie_migrate_a_new_postgres_database(pg_server: PgServer, tmp_path: Path) -> None:
    with psycopg.connect(pg_server.admin_url, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS reverie_migrate_cli")
        conn.execute("CREATE DATABASE reverie_migrate_cli")
    url = with_database(pg_server.admin_url, "reverie_migrate_cli")
    try:
        home = tmp_path / "home"
        names = [name for name, _ in PG_MIGRATIONS]
        assert names[:2] == ["0001_initial", "0002_kv_graph"]
        assert json.loads(cli(home, "migrate", "--store", url, "--dry-run", "--json"))["pending"] == names
        assert json.loads(cli(home, "migrate", "--store", url, "--json"))["applied_now"] == names
        assert json.loads(cli(home, "migrate", "--store", url, "--dry-run", "--json"))["pending"] == []
    finally:
        pg_server.drop_database(url)

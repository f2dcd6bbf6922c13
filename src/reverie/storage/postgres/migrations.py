"""Named, ordered schema migrations for the PostgreSQL backend.

Invariant: an applied migration is never edited. A schema change is a new entry at the end of
``MIGRATIONS``; ``apply`` runs the missing ones in order, each in its own transaction (PostgreSQL DDL is
transactional), under an advisory lock so that several processes opening a new database migrate it once.

The tables and columns mirror the SQLite backend's (``storage.sqlite.migrations``) with native types:
timestamptz, jsonb, boolean, double precision and pgvector's ``vector``. Two things differ by design:
- Full-text search is a ``tsvector`` column kept by a trigger (content weight A, tags B, category C) under
  a GIN index; the in-memory BM25 index of ``recall.lexical = "memory"`` reads the same change log as on
  SQLite.
- The change logs (``fact_log``, ``vector_log``) are written by triggers that first take the agent's
  log advisory lock (``database.LOCK_LOG``) until commit, so an agent's log positions follow commit
  order: a reader that sees position N of an agent has seen every earlier position of that agent.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from reverie.storage.postgres.database import LOCK_LOG, LOCK_MIGRATE, Conn, PgDatabase

_INITIAL = f"""
CREATE TABLE facts (
    seq                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id                  text NOT NULL UNIQUE,
    agent_id            text NOT NULL,
    user_id             text,
    session_id          text,
    content             text NOT NULL,
    category            text NOT NULL,
    tags                jsonb NOT NULL DEFAULT '[]',
    tier                text NOT NULL,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz,
    last_seen_at        timestamptz NOT NULL,
    reinforcement_count integer NOT NULL DEFAULT 1,
    importance          double precision NOT NULL,
    retention           double precision NOT NULL,
    confidence          double precision NOT NULL,
    pinned              boolean NOT NULL DEFAULT false,
    expires_at          timestamptz,
    archived_at         timestamptz,
    superseded_by       text,
    metadata            jsonb NOT NULL DEFAULT '{{}}',
    decayed_through     timestamptz,
    read_strength       double precision NOT NULL DEFAULT 0,
    read_at             timestamptz,
    fold_pending        boolean NOT NULL DEFAULT false,
    expand_pending      boolean NOT NULL DEFAULT false,
    search_text         tsvector NOT NULL DEFAULT ''::tsvector
);
CREATE INDEX facts_scope_recent ON facts (agent_id, archived_at, last_seen_at);
CREATE INDEX facts_scope_category ON facts (agent_id, category);
CREATE INDEX facts_archived ON facts (archived_at) WHERE archived_at IS NOT NULL;
CREATE INDEX facts_sequence ON facts (agent_id, (metadata->>'thread'), ((metadata->>'position')));
CREATE INDEX facts_fold_pending ON facts (id) WHERE fold_pending;
CREATE INDEX facts_expand_pending ON facts (seq) WHERE expand_pending;
CREATE INDEX facts_search ON facts USING gin (search_text);

-- The text search configuration of entries and queries: english stemming and stopwords, with accents
-- folded ("cafe" finds "Café", as SQLite's remove_diacritics) when the unaccent extension can be made
-- (a trusted extension: the database owner may create it). Without it, search is accent-sensitive.
DO $$
BEGIN
    BEGIN
        CREATE EXTENSION IF NOT EXISTS unaccent;
    EXCEPTION WHEN OTHERS THEN
        RAISE NOTICE 'unaccent is not available: full-text search will not fold accents';
    END;
    CREATE TEXT SEARCH CONFIGURATION reverie_english (COPY = english);
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'unaccent') THEN
        -- ASCII words have no accents: only the other word types go through unaccent.
        ALTER TEXT SEARCH CONFIGURATION reverie_english
            ALTER MAPPING FOR word, hword, hword_part WITH unaccent, english_stem;
        ALTER TEXT SEARCH CONFIGURATION reverie_english
            ALTER MAPPING FOR numword, numhword, hword_numpart WITH unaccent, simple;
    END IF;
END $$;

-- The searchable text of an entry; the check recomputes it to find rows out of step.
CREATE FUNCTION reverie_search_vector(content text, tags jsonb, category text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT setweight(to_tsvector('reverie_english'::regconfig, content), 'A')
        || setweight(to_tsvector('reverie_english'::regconfig, coalesce(
            (SELECT string_agg(value, ' ') FROM jsonb_array_elements_text(tags)), '')), 'B')
        || setweight(to_tsvector('reverie_english'::regconfig, translate(category, '/-_', '   ')), 'C')
$$;
CREATE FUNCTION reverie_search_text() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.search_text := reverie_search_vector(NEW.content, NEW.tags, NEW.category);
    RETURN NEW;
END $$;
CREATE TRIGGER facts_search_insert BEFORE INSERT ON facts
    FOR EACH ROW EXECUTE FUNCTION reverie_search_text();
CREATE TRIGGER facts_search_update BEFORE UPDATE OF content, tags, category ON facts
    FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content OR OLD.tags IS DISTINCT FROM NEW.tags
        OR OLD.category IS DISTINCT FROM NEW.category)
    EXECUTE FUNCTION reverie_search_text();

CREATE TABLE fact_versions (
    fact_id     text NOT NULL,
    version     integer NOT NULL,
    change      text NOT NULL,
    recorded_at timestamptz NOT NULL,
    content     text NOT NULL,
    category    text NOT NULL,
    tags        jsonb NOT NULL,
    importance  double precision NOT NULL,
    metadata    jsonb NOT NULL,
    archived    boolean NOT NULL,
    PRIMARY KEY (fact_id, version)
);

CREATE TABLE fact_vectors (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fact_id     text NOT NULL UNIQUE,
    agent_id    text NOT NULL,
    model       text NOT NULL,
    dim         integer NOT NULL,
    vector      vector NOT NULL,
    embedded_at timestamptz NOT NULL
);
CREATE INDEX fact_vectors_agent_model ON fact_vectors (agent_id, model);

CREATE TABLE store_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);

-- The change logs. An identity column never reuses a position, so "after N" is exact; the log lock
-- makes an agent's positions follow commit order (see the module docstring).
CREATE TABLE fact_log (
    seq      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent_id text NOT NULL,
    fact_id  text NOT NULL
);
CREATE INDEX fact_log_agent ON fact_log (agent_id, seq);
CREATE TABLE vector_log (
    seq      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent_id text NOT NULL,
    model    text NOT NULL,
    fact_id  text NOT NULL
);
-- (agent_id, seq), not (agent_id, model, seq): the watermark is max(seq) of the agent's rows of every model.
CREATE INDEX vector_log_agent ON vector_log (agent_id, seq);

CREATE FUNCTION reverie_log_fact() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    row facts%ROWTYPE;
BEGIN
    IF TG_OP = 'DELETE' THEN row := OLD; ELSE row := NEW; END IF;
    PERFORM pg_advisory_xact_lock({LOCK_LOG}, hashtext(row.agent_id));
    INSERT INTO fact_log (agent_id, fact_id) VALUES (row.agent_id, row.id);
    RETURN NULL;
END $$;
CREATE TRIGGER fact_log_insert AFTER INSERT ON facts FOR EACH ROW EXECUTE FUNCTION reverie_log_fact();
CREATE TRIGGER fact_log_delete AFTER DELETE ON facts FOR EACH ROW EXECUTE FUNCTION reverie_log_fact();
-- Every write sets every column: only a real change of the searchable state may cost an index a row.
CREATE TRIGGER fact_log_update AFTER UPDATE ON facts FOR EACH ROW
    WHEN (OLD.content IS DISTINCT FROM NEW.content OR OLD.tags IS DISTINCT FROM NEW.tags
        OR OLD.category IS DISTINCT FROM NEW.category OR OLD.archived_at IS DISTINCT FROM NEW.archived_at
        OR OLD.user_id IS DISTINCT FROM NEW.user_id OR OLD.session_id IS DISTINCT FROM NEW.session_id
        OR OLD.expires_at IS DISTINCT FROM NEW.expires_at)
    EXECUTE FUNCTION reverie_log_fact();

CREATE FUNCTION reverie_log_vector() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    row fact_vectors%ROWTYPE;
BEGIN
    IF TG_OP = 'DELETE' THEN row := OLD; ELSE row := NEW; END IF;
    PERFORM pg_advisory_xact_lock({LOCK_LOG}, hashtext(row.agent_id));
    INSERT INTO vector_log (agent_id, model, fact_id) VALUES (row.agent_id, row.model, row.fact_id);
    RETURN NULL;
END $$;
CREATE TRIGGER fact_vectors_logged_insert AFTER INSERT ON fact_vectors
    FOR EACH ROW EXECUTE FUNCTION reverie_log_vector();
CREATE TRIGGER fact_vectors_logged_delete AFTER DELETE ON fact_vectors
    FOR EACH ROW EXECUTE FUNCTION reverie_log_vector();

-- A vector always matches the current text: a rewrite drops it and the embedding worker makes a new one.
CREATE FUNCTION reverie_drop_vector() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM fact_vectors WHERE fact_id = OLD.id;
    ELSE
        DELETE FROM fact_vectors WHERE fact_id = NEW.id;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER fact_vectors_stale AFTER UPDATE OF content ON facts
    FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content) EXECUTE FUNCTION reverie_drop_vector();
CREATE TRIGGER fact_vectors_purged AFTER DELETE ON facts
    FOR EACH ROW EXECUTE FUNCTION reverie_drop_vector();

-- The dream service (seed 001): ledger, lock lease, activity, runs, evidence; and the purge log.
CREATE TABLE dream_ledger (
    agent_id    text NOT NULL,
    pass_name   text NOT NULL,
    stamped_at  timestamptz NOT NULL,
    fingerprint text,
    PRIMARY KEY (agent_id, pass_name)
);
CREATE TABLE dream_locks (
    agent_id        text PRIMARY KEY,
    holder          text,
    acquired_at     timestamptz,
    expires_at      timestamptz,
    last_dream_at   timestamptz,
    abort_requested boolean NOT NULL DEFAULT false
);
CREATE TABLE dream_activity (
    agent_id    text NOT NULL,
    session_key text NOT NULL,
    last_at     timestamptz NOT NULL,
    PRIMARY KEY (agent_id, session_key)
);
CREATE INDEX dream_activity_last ON dream_activity (last_at);
CREATE TABLE dream_runs (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id       text NOT NULL UNIQUE,
    agent_id     text NOT NULL,
    run_trigger  text NOT NULL,
    started_at   timestamptz NOT NULL,
    phase        text NOT NULL,
    finished_at  timestamptz,
    current_pass text,
    progress     text NOT NULL DEFAULT '',
    tokens       bigint NOT NULL DEFAULT 0,
    cost         double precision NOT NULL DEFAULT 0,
    report       jsonb NOT NULL DEFAULT '{{}}',
    error        text
);
CREATE INDEX dream_runs_agent_started ON dream_runs (agent_id, started_at);
CREATE INDEX dream_runs_started ON dream_runs (started_at);
CREATE INDEX dream_runs_finished ON dream_runs (finished_at) WHERE finished_at IS NOT NULL;
CREATE TABLE dream_evidence (
    seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id    text NOT NULL,
    target_id text NOT NULL,
    source_id text NOT NULL,
    at        timestamptz NOT NULL,
    UNIQUE (run_id, target_id, source_id)
);
CREATE INDEX dream_evidence_target ON dream_evidence (target_id, at, seq);
CREATE TABLE purge_log (
    seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fact_id   text NOT NULL,
    agent_id  text NOT NULL,
    purged_at timestamptz NOT NULL
);
CREATE INDEX purge_log_purged ON purge_log (purged_at, seq);
CREATE INDEX purge_log_agent ON purge_log (agent_id, purged_at, seq);

-- Conversation memory and sessions.
CREATE TABLE sessions (
    agent_id          text NOT NULL,
    session_id        text NOT NULL,
    name              text,
    metadata          jsonb NOT NULL DEFAULT '{{}}',
    created_at        timestamptz NOT NULL,
    last_active_at    timestamptz NOT NULL,
    started_at        timestamptz NOT NULL,
    summary           text,
    compacted_through integer NOT NULL DEFAULT 0,
    deleted_at        timestamptz,
    PRIMARY KEY (agent_id, session_id)
);
CREATE INDEX sessions_recent ON sessions (agent_id, last_active_at);
CREATE INDEX sessions_deleted ON sessions (deleted_at) WHERE deleted_at IS NOT NULL;
CREATE TABLE turns (
    agent_id     text NOT NULL,
    session_id   text NOT NULL,
    turn_index   integer NOT NULL,
    role         text NOT NULL,
    content      text NOT NULL,
    at           timestamptz NOT NULL,
    name         text,
    tool_call_id text,
    tool_calls   jsonb,
    archived     boolean NOT NULL DEFAULT false,
    PRIMARY KEY (agent_id, session_id, turn_index),
    FOREIGN KEY (agent_id, session_id) REFERENCES sessions (agent_id, session_id) ON DELETE CASCADE
);
CREATE INDEX turns_archived ON turns (agent_id, session_id, archived, turn_index);

-- Working memory: scratch entries with a TTL (expiry is deletion by the sweep, so no versions).
CREATE TABLE working_entries (
    agent_id   text NOT NULL,
    key        text NOT NULL,
    value      text NOT NULL,
    category   text,
    tags       jsonb NOT NULL DEFAULT '[]',
    stored_at  timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    seq        bigint NOT NULL,
    PRIMARY KEY (agent_id, key)
);
CREATE INDEX working_entries_expiry ON working_entries (agent_id, expires_at);
CREATE INDEX working_entries_seq ON working_entries (seq);
CREATE SEQUENCE working_entries_order;

-- API keys (only the secret's SHA-256 is stored) and the LLM usage log.
CREATE TABLE api_keys (
    key_id       text PRIMARY KEY,
    name         text NOT NULL,
    agent_id     text,
    scopes       jsonb NOT NULL DEFAULT '[]',
    key_hash     text NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL,
    revoked_at   timestamptz,
    last_used_at timestamptz
);
CREATE TABLE llm_usage (
    seq               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at                timestamptz NOT NULL,
    agent_id          text NOT NULL,
    provider          text NOT NULL,
    model             text NOT NULL,
    purpose           text NOT NULL,
    prompt_tokens     bigint NOT NULL,
    completion_tokens bigint NOT NULL,
    cost              double precision NOT NULL,
    ok                boolean NOT NULL
);
CREATE INDEX llm_usage_at ON llm_usage (at, seq);
CREATE INDEX llm_usage_agent_at ON llm_usage (agent_id, at, seq);
"""

# Key-value memory and the knowledge graph (``storage.knowledge``), as SQLite's 0013_kv_graph. A key sorts
# by code point (COLLATE "C", so the primary key serves the ordered, cursor-paged listing); an entity's
# sources are found by entry id through the GIN index (``sources ?| array[...]``).
_KV_GRAPH = """
CREATE TABLE kv_items (
    agent_id   text NOT NULL,
    key        text COLLATE "C" NOT NULL,
    value      jsonb,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    version    integer NOT NULL,
    deleted_at timestamptz,
    PRIMARY KEY (agent_id, key)
);
CREATE INDEX kv_items_deleted ON kv_items (deleted_at) WHERE deleted_at IS NOT NULL;
CREATE TABLE kg_entities (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent_id     text NOT NULL,
    entity_id    text NOT NULL,
    type         text NOT NULL,
    name         text NOT NULL,
    key          text NOT NULL,
    properties   jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz,
    updated_at   timestamptz,
    last_seen_at timestamptz,
    sources      jsonb NOT NULL DEFAULT '[]',
    merged_into  text,
    archived_at  timestamptz,
    UNIQUE (agent_id, entity_id),
    UNIQUE (agent_id, type, key)
);
CREATE INDEX kg_entities_key ON kg_entities (agent_id, key);
CREATE INDEX kg_entities_recent ON kg_entities (agent_id, last_seen_at);
CREATE INDEX kg_entities_sources ON kg_entities USING gin (sources);
CREATE TABLE kg_relations (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent_id    text NOT NULL,
    relation_id text NOT NULL,
    source_id   text NOT NULL,
    relation    text NOT NULL,
    target_id   text NOT NULL,
    properties  jsonb NOT NULL DEFAULT '{}',
    valid_from  timestamptz,
    invalid_at  timestamptz,
    created_at  timestamptz,
    sources     jsonb NOT NULL DEFAULT '[]',
    UNIQUE (agent_id, relation_id)
);
CREATE INDEX kg_relations_source ON kg_relations (agent_id, source_id);
CREATE INDEX kg_relations_target ON kg_relations (agent_id, target_id);
CREATE INDEX kg_relations_relation ON kg_relations (agent_id, relation);
"""

# The knowledge graph's extraction queue (``memory.graph_extraction``), as SQLite's 0014_graph_extraction.
_GRAPH_EXTRACTION = """
CREATE TABLE graph_extraction (
    seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fact_id   text NOT NULL UNIQUE,
    agent_id  text NOT NULL,
    queued_at timestamptz NOT NULL
);
"""

# Skills, their versions, the skill-usage log and the feedback log (``storage.skills``), as SQLite's
# 0016_skills_feedback. Names sort by code point (COLLATE "C", SQLite's BINARY); a skill's vector is pgvector's
# ``vector`` without a fixed dimension (the skills are scored in the process, never through an index).
_SKILLS_FEEDBACK = """
CREATE TABLE skills (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent_id     text NOT NULL,
    name         text COLLATE "C" NOT NULL,
    summary      text NOT NULL,
    content      text NOT NULL,
    see_also     jsonb NOT NULL DEFAULT '[]',
    metadata     jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    archived_at  timestamptz,
    version      integer NOT NULL,
    vector       vector,
    vector_model text,
    UNIQUE (agent_id, name)
);
CREATE INDEX skills_archived ON skills (archived_at) WHERE archived_at IS NOT NULL;
CREATE TABLE skill_versions (
    agent_id    text NOT NULL,
    name        text COLLATE "C" NOT NULL,
    version     integer NOT NULL,
    change      text NOT NULL,
    recorded_at timestamptz NOT NULL,
    summary     text NOT NULL,
    content     text NOT NULL,
    see_also    jsonb NOT NULL DEFAULT '[]',
    metadata    jsonb NOT NULL DEFAULT '{}',
    archived    boolean NOT NULL,
    PRIMARY KEY (agent_id, name, version)
);
CREATE TABLE skill_usage (
    seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent_id   text NOT NULL,
    session_id text NOT NULL,
    name       text COLLATE "C" NOT NULL,
    used_at    timestamptz NOT NULL
);
CREATE INDEX skill_usage_agent_at ON skill_usage (agent_id, used_at);
CREATE INDEX skill_usage_session ON skill_usage (agent_id, session_id);
CREATE INDEX skill_usage_at ON skill_usage (used_at);
CREATE TABLE feedback (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    feedback_id text NOT NULL UNIQUE,
    agent_id    text NOT NULL,
    session_id  text NOT NULL,
    kind        text NOT NULL,
    rating      text,
    comment     text,
    entry_ids   jsonb NOT NULL DEFAULT '[]',
    skill_names jsonb NOT NULL DEFAULT '[]',
    created_at  timestamptz NOT NULL
);
CREATE INDEX feedback_agent_at ON feedback (agent_id, created_at);
CREATE INDEX feedback_session ON feedback (agent_id, session_id);
CREATE INDEX feedback_at ON feedback (created_at);
"""

_SUPERSESSION_LOG = """
-- A contradicted entry stays unarchived with superseded_by set and leaves search: indexes must hear of it.
DROP TRIGGER fact_log_update ON facts;
CREATE TRIGGER fact_log_update AFTER UPDATE ON facts FOR EACH ROW
    WHEN (OLD.content IS DISTINCT FROM NEW.content OR OLD.tags IS DISTINCT FROM NEW.tags
        OR OLD.category IS DISTINCT FROM NEW.category OR OLD.archived_at IS DISTINCT FROM NEW.archived_at
        OR OLD.superseded_by IS DISTINCT FROM NEW.superseded_by
        OR OLD.user_id IS DISTINCT FROM NEW.user_id OR OLD.session_id IS DISTINCT FROM NEW.session_id
        OR OLD.expires_at IS DISTINCT FROM NEW.expires_at)
    EXECUTE FUNCTION reverie_log_fact();
"""

_TIME_INDEX = """
-- Recall's named-time candidates (FactRepository.in_period): entries saved in a period, and entries whose
-- subject time (its first ten characters: a year, month or day) falls in it.
CREATE INDEX facts_created ON facts (agent_id, created_at);
CREATE INDEX facts_subject_time ON facts (agent_id, left(metadata->>'subjectTime', 10));
"""

# The telemetry logs the dream learns from (``storage.logs``), as SQLite's 0019_activity_logs: one database for
# every host, so a dream worker anywhere reads every host's traffic. Session ids sort by code point (COLLATE
# "C") for retention's listing. ``context_injected`` is the context builder's delta filter.
_ACTIVITY_LOGS = """
CREATE TABLE conversation_log (
    seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent_id   text NOT NULL,
    session_id text COLLATE "C" NOT NULL,
    at         timestamptz NOT NULL,
    record     jsonb NOT NULL
);
CREATE INDEX conversation_log_agent ON conversation_log (agent_id, session_id, seq);
CREATE INDEX conversation_log_session ON conversation_log (session_id, seq);
CREATE TABLE execution_log (
    seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent_id   text NOT NULL,
    session_id text,
    at         timestamptz NOT NULL,
    record     jsonb NOT NULL
);
CREATE INDEX execution_log_agent_at ON execution_log (agent_id, at, seq);
CREATE TABLE tool_call_log (
    seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent_id   text NOT NULL,
    session_id text,
    at         timestamptz NOT NULL,
    record     jsonb NOT NULL
);
CREATE INDEX tool_call_log_agent_at ON tool_call_log (agent_id, at, seq);
CREATE TABLE context_injected (
    agent_id    text NOT NULL,
    session_id  text NOT NULL,
    entry_id    text NOT NULL,
    injected_at timestamptz NOT NULL,
    PRIMARY KEY (agent_id, session_id, entry_id),
    FOREIGN KEY (agent_id, session_id) REFERENCES sessions (agent_id, session_id) ON DELETE CASCADE
);
"""

# Keys bound to users (issue 20): the users a key may name, a JSON array (["*"]: any user). A key created before
# this column keeps NULL: it may still name any user, as every key could then, and `reverie keys list` warns
# about it until it is bound (`reverie keys bind`). New keys always store an array ([] for none).
_KEY_USERS = """
ALTER TABLE api_keys ADD COLUMN users jsonb;
"""

# The dream lock's holder (issue 20), as SQLite's 0020_dream_holder: the pid and host of the process holding the
# lease, its heartbeat period and last heartbeat. The advisory lock already says whether the holder's session
# lives; these say who it is (status) and serve a caller that judges by process and heartbeat.
_DREAM_HOLDER = """
ALTER TABLE dream_locks ADD COLUMN holder_pid integer;
ALTER TABLE dream_locks ADD COLUMN holder_host text;
ALTER TABLE dream_locks ADD COLUMN heartbeat_seconds double precision;
ALTER TABLE dream_locks ADD COLUMN heartbeat_at timestamptz;
"""

# The entries a later one contradicted (superseded, not archived): search hands their matches to their
# successors (``memory.successor``), reading them again after each write of the agent — without this index a
# scan of the agent's current entries (as SQLite's 0022_replaced_index).
_REPLACED_INDEX = """
CREATE INDEX facts_replaced ON facts (agent_id, archived_at, last_seen_at)
    WHERE superseded_by IS NOT NULL AND archived_at IS NULL;
"""

MIGRATIONS: list[tuple[str, str]] = [
    ("0001_initial", _INITIAL),
    ("0002_kv_graph", _KV_GRAPH),
    ("0003_graph_extraction", _GRAPH_EXTRACTION),
    ("0005_skills_feedback", _SKILLS_FEEDBACK),
    ("0006_supersession_log", _SUPERSESSION_LOG),
    ("0007_time_index", _TIME_INDEX),
    ("0008_activity_logs", _ACTIVITY_LOGS),
    ("0009_dream_holder", _DREAM_HOLDER),
    ("0010_key_users", _KEY_USERS),
    ("0011_replaced_index", _REPLACED_INDEX),
]


def apply(db: PgDatabase, now: datetime) -> list[str]:
    """Create the ``vector`` extension when missing, then apply every missing migration; returns the names
    applied now. Uses its own connection: the pool's connections register the ``vector`` type, which must
    exist first."""
    applied: list[str] = []
    with db.connect() as conn:
        _ensure_vector(conn, db.where)
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_MIGRATE,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL)"
            )
        for name, script in MIGRATIONS:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_MIGRATE,))
                if conn.execute("SELECT 1 FROM schema_migrations WHERE name = %s", (name,)).fetchone():
                    continue
                conn.execute(script.encode())
                conn.execute("INSERT INTO schema_migrations (name, applied_at) VALUES (%s, %s)", (name, now))
                applied.append(name)
    return applied


def pending(db: PgDatabase) -> list[str]:
    """The migrations not applied yet (``reverie migrate --dry-run``)."""
    with db.connect() as conn:
        exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
        done: set[str] = set()
        if exists and exists[0]:
            done = {str(r[0]) for r in conn.execute("SELECT name FROM schema_migrations").fetchall()}
    return [name for name, _ in MIGRATIONS if name not in done]


def applied(db: PgDatabase) -> list[tuple[str, datetime]]:
    def work(c: Conn) -> list[tuple[Any, ...]]:
        return c.execute("SELECT name, applied_at FROM schema_migrations ORDER BY name").fetchall()

    return [(str(name), when) for name, when in db.read(work)]


def _ensure_vector(conn: Conn, where: str) -> None:
    import psycopg

    from reverie.errors import StorageError

    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raise StorageError(
            f"{where}: the pgvector extension is not installed and could not be created ({str(exc).strip()});"
            " install pgvector on the server or ask an administrator to run CREATE EXTENSION vector"
        ) from exc

"""The SQLite backend's schema history: every migration's SQL, in order (``MIGRATIONS``), run by
``migrations.apply``.

Invariant: an applied migration is never edited. A schema change is a new script and a new entry at the end
of ``MIGRATIONS``; the names are what stores record, so they never change either.
"""

from __future__ import annotations

_INITIAL = """
CREATE TABLE facts (
    -- An explicit INTEGER PRIMARY KEY: VACUUM may renumber implicit rowids, which would silently
    -- detach the external-content FTS index from its rows.
    seq                 INTEGER PRIMARY KEY,
    id                  TEXT NOT NULL UNIQUE,
    agent_id            TEXT NOT NULL,
    user_id             TEXT,
    session_id          TEXT,
    content             TEXT NOT NULL,
    category            TEXT NOT NULL,
    tags                TEXT NOT NULL DEFAULT '[]',
    tier                TEXT NOT NULL,
    created_at          TEXT NOT NULL,
    updated_at          TEXT,
    last_seen_at        TEXT NOT NULL,
    reinforcement_count INTEGER NOT NULL DEFAULT 1,
    importance          REAL NOT NULL,
    retention           REAL NOT NULL,
    confidence          REAL NOT NULL,
    pinned              INTEGER NOT NULL DEFAULT 0,
    expires_at          TEXT,
    archived_at         TEXT,
    superseded_by       TEXT,
    metadata            TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX facts_scope_recent ON facts (agent_id, archived_at, last_seen_at);
CREATE INDEX facts_scope_category ON facts (agent_id, category);
CREATE INDEX facts_archived ON facts (archived_at) WHERE archived_at IS NOT NULL;

-- BM25 over content + tags + category. unicode61 splits on '/', '-', '_' and JSON punctuation, so the
-- category path and the tags array read as words. Kept in sync by the triggers below.
CREATE VIRTUAL TABLE facts_fts USING fts5(
    content, tags, category,
    content = 'facts', content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER facts_fts_insert AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts (rowid, content, tags, category)
    VALUES (new.seq, new.content, new.tags, new.category);
END;
CREATE TRIGGER facts_fts_delete AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, content, tags, category)
    VALUES ('delete', old.seq, old.content, old.tags, old.category);
END;
CREATE TRIGGER facts_fts_update AFTER UPDATE OF content, tags, category ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, content, tags, category)
    VALUES ('delete', old.seq, old.content, old.tags, old.category);
    INSERT INTO facts_fts (rowid, content, tags, category)
    VALUES (new.seq, new.content, new.tags, new.category);
END;

CREATE TABLE fact_versions (
    fact_id     TEXT NOT NULL,
    version     INTEGER NOT NULL,
    change      TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    content     TEXT NOT NULL,
    category    TEXT NOT NULL,
    tags        TEXT NOT NULL,
    importance  REAL NOT NULL,
    metadata    TEXT NOT NULL,
    archived    INTEGER NOT NULL,
    PRIMARY KEY (fact_id, version)
) WITHOUT ROWID;

-- Room for vectors; the recall layer fills it. One vector per fact, tagged with its model.
CREATE TABLE fact_vectors (
    fact_id     TEXT PRIMARY KEY,
    model       TEXT NOT NULL,
    dim         INTEGER NOT NULL,
    vector      BLOB NOT NULL,
    embedded_at TEXT NOT NULL
) WITHOUT ROWID;
"""

_VECTORS = """
-- 0001 reserved an (always empty) vector table; the recall layer also needs the agent id and a change log.
DROP TABLE fact_vectors;
CREATE TABLE fact_vectors (
    fact_id     TEXT PRIMARY KEY,
    agent_id    TEXT NOT NULL,
    model       TEXT NOT NULL,
    dim         INTEGER NOT NULL,
    vector      BLOB NOT NULL,
    embedded_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX fact_vectors_agent_model ON fact_vectors (agent_id, model);
-- Every vector written or dropped leaves a row here; in-memory indexes (in any process) replay the rows
-- after their watermark. AUTOINCREMENT: a seq is never reused, so "after N" is exact.
CREATE TABLE vector_log (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id TEXT NOT NULL,
    model    TEXT NOT NULL,
    fact_id  TEXT NOT NULL
);
CREATE INDEX vector_log_agent_model ON vector_log (agent_id, model, seq);
CREATE TRIGGER fact_vectors_logged_insert AFTER INSERT ON fact_vectors BEGIN
    INSERT INTO vector_log (agent_id, model, fact_id) VALUES (new.agent_id, new.model, new.fact_id);
END;
CREATE TRIGGER fact_vectors_logged_delete AFTER DELETE ON fact_vectors BEGIN
    INSERT INTO vector_log (agent_id, model, fact_id) VALUES (old.agent_id, old.model, old.fact_id);
END;
-- A vector always matches the current text: a rewrite drops it and the embedding worker makes a new one.
CREATE TRIGGER fact_vectors_stale AFTER UPDATE OF content ON facts
WHEN old.content IS NOT new.content BEGIN
    DELETE FROM fact_vectors WHERE fact_id = new.id;
END;
CREATE TRIGGER fact_vectors_purged AFTER DELETE ON facts BEGIN
    DELETE FROM fact_vectors WHERE fact_id = old.id;
END;
CREATE TABLE store_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
"""

_SEQUENCE = """
-- Sequence neighbours (metadata.thread + metadata.position: conversation turns, document chunks).
CREATE INDEX facts_sequence ON facts (
    agent_id, json_extract(metadata, '$.thread'), json_extract(metadata, '$.position')
);
"""

_FTS_AGENT = """
-- The full-text index also indexes agent_id, so a search intersects its terms with the caller's agent
-- inside FTS5 instead of ranking every agent's matches and filtering afterwards (20x faster with many
-- agents in one store). The SQL scope filter still decides visibility; this is only a pre-filter.
DROP TRIGGER facts_fts_insert;
DROP TRIGGER facts_fts_delete;
DROP TRIGGER facts_fts_update;
DROP TABLE facts_fts;
CREATE VIRTUAL TABLE facts_fts USING fts5(
    content, tags, category, agent_id,
    content = 'facts', content_rowid = 'seq',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO facts_fts (facts_fts) VALUES ('rebuild');
CREATE TRIGGER facts_fts_insert AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts (rowid, content, tags, category, agent_id)
    VALUES (new.seq, new.content, new.tags, new.category, new.agent_id);
END;
CREATE TRIGGER facts_fts_delete AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, content, tags, category, agent_id)
    VALUES ('delete', old.seq, old.content, old.tags, old.category, old.agent_id);
END;
CREATE TRIGGER facts_fts_update AFTER UPDATE OF content, tags, category, agent_id ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, content, tags, category, agent_id)
    VALUES ('delete', old.seq, old.content, old.tags, old.category, old.agent_id);
    INSERT INTO facts_fts (rowid, content, tags, category, agent_id)
    VALUES (new.seq, new.content, new.tags, new.category, new.agent_id);
END;
"""

_VECTORS_ROWID = """
-- In a WITHOUT ROWID table a 1.5 KB vector overflows onto its own 4 KB page (~70% of the file wasted);
-- a rowid table keeps up to ~4 KB inline, so vectors pack two to a page.
CREATE TABLE fact_vectors_packed (
    seq         INTEGER PRIMARY KEY,
    fact_id     TEXT NOT NULL UNIQUE,
    agent_id    TEXT NOT NULL,
    model       TEXT NOT NULL,
    dim         INTEGER NOT NULL,
    vector      BLOB NOT NULL,
    embedded_at TEXT NOT NULL
);
INSERT INTO fact_vectors_packed (fact_id, agent_id, model, dim, vector, embedded_at)
    SELECT fact_id, agent_id, model, dim, vector, embedded_at FROM fact_vectors;
-- Triggers that name the old table go first (a rename re-checks them), and come back below.
DROP TRIGGER fact_vectors_stale;
DROP TRIGGER fact_vectors_purged;
DROP TABLE fact_vectors;
ALTER TABLE fact_vectors_packed RENAME TO fact_vectors;
CREATE TRIGGER fact_vectors_stale AFTER UPDATE OF content ON facts
WHEN old.content IS NOT new.content BEGIN
    DELETE FROM fact_vectors WHERE fact_id = new.id;
END;
CREATE TRIGGER fact_vectors_purged AFTER DELETE ON facts BEGIN
    DELETE FROM fact_vectors WHERE fact_id = old.id;
END;
CREATE INDEX fact_vectors_agent_model ON fact_vectors (agent_id, model);
CREATE TRIGGER fact_vectors_logged_insert AFTER INSERT ON fact_vectors BEGIN
    INSERT INTO vector_log (agent_id, model, fact_id) VALUES (new.agent_id, new.model, new.fact_id);
END;
CREATE TRIGGER fact_vectors_logged_delete AFTER DELETE ON fact_vectors BEGIN
    INSERT INTO vector_log (agent_id, model, fact_id) VALUES (old.agent_id, old.model, old.fact_id);
END;
"""

_FACT_LOG = """
-- Every change to an entry's searchable state (text, scope, archived, expiry) leaves a row here; in-memory
-- lexical indexes (in any process) replay the rows after their watermark, as vector indexes replay
-- vector_log. No backfill: an index starts from a snapshot of facts. The WHEN clause matters: a write
-- sets every column (a reinforcement too), and only a real change may cost an index a row.
CREATE TABLE fact_log (
    seq      INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id TEXT NOT NULL,
    fact_id  TEXT NOT NULL
);
CREATE INDEX fact_log_agent ON fact_log (agent_id, seq);
CREATE TRIGGER fact_log_insert AFTER INSERT ON facts BEGIN
    INSERT INTO fact_log (agent_id, fact_id) VALUES (new.agent_id, new.id);
END;
CREATE TRIGGER fact_log_update
AFTER UPDATE OF content, tags, category, archived_at, user_id, session_id, expires_at ON facts
WHEN old.content IS NOT new.content OR old.tags IS NOT new.tags OR old.category IS NOT new.category
    OR old.archived_at IS NOT new.archived_at OR old.user_id IS NOT new.user_id
    OR old.session_id IS NOT new.session_id OR old.expires_at IS NOT new.expires_at
BEGIN
    INSERT INTO fact_log (agent_id, fact_id) VALUES (new.agent_id, new.id);
END;
CREATE TRIGGER fact_log_delete AFTER DELETE ON facts BEGIN
    INSERT INTO fact_log (agent_id, fact_id) VALUES (old.agent_id, old.id);
END;
"""

_AGING = """
-- Aging state (seed 000 importance decay, seed 003 retention) and the semantic-deduplication queue.
-- decayed_through: how far importance decay has been applied (calendar-time invariant decay);
-- read_strength / read_at: the fading sum of reads (search hits, get, links, explore);
-- fold_pending: saved with deduplication on and not yet compared by embedding.
ALTER TABLE facts ADD COLUMN decayed_through TEXT;
ALTER TABLE facts ADD COLUMN read_strength REAL NOT NULL DEFAULT 0;
ALTER TABLE facts ADD COLUMN read_at TEXT;
ALTER TABLE facts ADD COLUMN fold_pending INTEGER NOT NULL DEFAULT 0;
CREATE INDEX facts_fold_pending ON facts (fold_pending) WHERE fold_pending = 1;
-- Every write sets every column, so UPDATE OF alone re-indexed the text of each reinforcement and
-- bookkeeping write; re-index only when the indexed text really changed.
DROP TRIGGER facts_fts_update;
CREATE TRIGGER facts_fts_update AFTER UPDATE OF content, tags, category, agent_id ON facts
WHEN old.content IS NOT new.content OR old.tags IS NOT new.tags OR old.category IS NOT new.category
    OR old.agent_id IS NOT new.agent_id
BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, content, tags, category, agent_id)
    VALUES ('delete', old.seq, old.content, old.tags, old.category, old.agent_id);
    INSERT INTO facts_fts (rowid, content, tags, category, agent_id)
    VALUES (new.seq, new.content, new.tags, new.category, new.agent_id);
END;
"""

_EXPANSION = """
-- The background expansion queue (seed 000's save_memory enrichment): an entry saved with an LLM configured
-- waits here until the LLM has read it into focused facts. A column, not metadata, so the queue is an
-- indexed lookup and the flag never shows in an entry's metadata or its versions.
ALTER TABLE facts ADD COLUMN expand_pending INTEGER NOT NULL DEFAULT 0;
CREATE INDEX facts_expand_pending ON facts (seq) WHERE expand_pending = 1;
"""

_DREAM = """
-- The dream service (seed 001). The change-gate ledger: when each pass last produced usable output for an
-- agent, and the fingerprint of the corpus it ran on.
CREATE TABLE dream_ledger (
    agent_id    TEXT NOT NULL,
    pass_name   TEXT NOT NULL,
    stamped_at  TEXT NOT NULL,
    fingerprint TEXT,
    PRIMARY KEY (agent_id, pass_name)
) WITHOUT ROWID;
-- One row per agent ever locked: the lease (holder NULL when free) and the time gate's last completed dream.
CREATE TABLE dream_locks (
    agent_id        TEXT PRIMARY KEY,
    holder          TEXT,
    acquired_at     TEXT,
    expires_at      TEXT,
    last_dream_at   TEXT,
    abort_requested INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
-- The latest activity per (agent, session); session_key '' is activity outside any session.
CREATE TABLE dream_activity (
    agent_id    TEXT NOT NULL,
    session_key TEXT NOT NULL,
    last_at     TEXT NOT NULL,
    PRIMARY KEY (agent_id, session_key)
) WITHOUT ROWID;
CREATE INDEX dream_activity_last ON dream_activity (last_at);
-- Runs: live status, then the report (JSON). An explicit INTEGER PRIMARY KEY keeps the tie order stable.
CREATE TABLE dream_runs (
    seq          INTEGER PRIMARY KEY,
    run_id       TEXT NOT NULL UNIQUE,
    agent_id     TEXT NOT NULL,
    run_trigger  TEXT NOT NULL,
    started_at   TEXT NOT NULL,
    phase        TEXT NOT NULL,
    finished_at  TEXT,
    current_pass TEXT,
    progress     TEXT NOT NULL DEFAULT '',
    tokens       INTEGER NOT NULL DEFAULT 0,
    cost         REAL NOT NULL DEFAULT 0,
    report       TEXT NOT NULL DEFAULT '{}',
    error        TEXT
);
CREATE INDEX dream_runs_agent_started ON dream_runs (agent_id, started_at);
CREATE INDEX dream_runs_started ON dream_runs (started_at);
CREATE INDEX dream_runs_finished ON dream_runs (finished_at) WHERE finished_at IS NOT NULL;
-- Which entries a merge folded into which: the trail from a merged entry back to its sources.
CREATE TABLE dream_evidence (
    seq       INTEGER PRIMARY KEY,
    run_id    TEXT NOT NULL,
    target_id TEXT NOT NULL,
    source_id TEXT NOT NULL,
    at        TEXT NOT NULL,
    UNIQUE (run_id, target_id, source_id)
);
CREATE INDEX dream_evidence_target ON dream_evidence (target_id, at, seq);
-- Every hard delete by the purge pass, written in the purge's transaction. AUTOINCREMENT: never reused.
CREATE TABLE purge_log (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    fact_id   TEXT NOT NULL,
    agent_id  TEXT NOT NULL,
    purged_at TEXT NOT NULL
);
CREATE INDEX purge_log_purged ON purge_log (purged_at, seq);
CREATE INDEX purge_log_agent ON purge_log (agent_id, purged_at, seq);
"""

# Conversation memory (seed 000) and sessions (seed 004). A turn's index is its position in the live
# conversation; its rows go with the session's (ON DELETE CASCADE: only the purge deletes a session).
_CONVERSATION = """
CREATE TABLE sessions (
    agent_id          TEXT NOT NULL,
    session_id        TEXT NOT NULL,
    name              TEXT,
    metadata          TEXT NOT NULL DEFAULT '{}',
    created_at        TEXT NOT NULL,
    last_active_at    TEXT NOT NULL,
    started_at        TEXT NOT NULL,
    summary           TEXT,
    compacted_through INTEGER NOT NULL DEFAULT 0,
    deleted_at        TEXT,
    PRIMARY KEY (agent_id, session_id)
);
CREATE INDEX sessions_recent ON sessions (agent_id, last_active_at);
CREATE INDEX sessions_deleted ON sessions (deleted_at) WHERE deleted_at IS NOT NULL;
CREATE TABLE turns (
    agent_id     TEXT NOT NULL,
    session_id   TEXT NOT NULL,
    turn_index   INTEGER NOT NULL,
    role         TEXT NOT NULL,
    content      TEXT NOT NULL,
    at           TEXT NOT NULL,
    name         TEXT,
    tool_call_id TEXT,
    tool_calls   TEXT,
    archived     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (agent_id, session_id, turn_index),
    FOREIGN KEY (agent_id, session_id) REFERENCES sessions (agent_id, session_id) ON DELETE CASCADE
);
CREATE INDEX turns_archived ON turns (agent_id, session_id, archived, turn_index);
"""

# Working memory (seed 000): scratch entries with a TTL. Expiry is deletion (the sweep), so no versions.
# seq orders entries stored at the same instant by write order (an upsert takes a new one).
_WORKING = """
CREATE TABLE working_entries (
    agent_id   TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    category   TEXT,
    tags       TEXT NOT NULL DEFAULT '[]',
    stored_at  TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (agent_id, key)
);
CREATE INDEX working_entries_expiry ON working_entries (agent_id, expires_at);
CREATE INDEX working_entries_seq ON working_entries (seq);
"""

# API keys (only the secret's SHA-256 is stored) and the LLM usage log (append-only, one row per call).
_KEYS_USAGE = """
CREATE TABLE api_keys (
    key_id       TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    agent_id     TEXT,
    scopes       TEXT NOT NULL DEFAULT '[]',
    key_hash     TEXT NOT NULL UNIQUE,
    created_at   TEXT NOT NULL,
    revoked_at   TEXT,
    last_used_at TEXT
);
CREATE TABLE llm_usage (
    seq               INTEGER PRIMARY KEY,
    at                TEXT NOT NULL,
    agent_id          TEXT NOT NULL,
    provider          TEXT NOT NULL,
    model             TEXT NOT NULL,
    purpose           TEXT NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost              REAL NOT NULL,
    ok                INTEGER NOT NULL
);
CREATE INDEX llm_usage_at ON llm_usage (at, seq);
CREATE INDEX llm_usage_agent_at ON llm_usage (agent_id, at, seq);
"""

# Key-value memory and the knowledge graph (seed 004; ``storage.knowledge``). A deleted key is marked (the
# purge removes it); merged and archived entities and invalidated relations stay. ``seq`` is insertion
# order, the tie-break of the entity and relation orders.
_KV_GRAPH = """
CREATE TABLE kv_items (
    agent_id   TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    version    INTEGER NOT NULL,
    deleted_at TEXT,
    PRIMARY KEY (agent_id, key)
) WITHOUT ROWID;
CREATE INDEX kv_items_deleted ON kv_items (deleted_at) WHERE deleted_at IS NOT NULL;
CREATE TABLE kg_entities (
    seq          INTEGER PRIMARY KEY,
    agent_id     TEXT NOT NULL,
    entity_id    TEXT NOT NULL,
    type         TEXT NOT NULL,
    name         TEXT NOT NULL,
    key          TEXT NOT NULL,
    properties   TEXT NOT NULL DEFAULT '{}',
    created_at   TEXT,
    updated_at   TEXT,
    last_seen_at TEXT,
    sources      TEXT NOT NULL DEFAULT '[]',
    merged_into  TEXT,
    archived_at  TEXT,
    UNIQUE (agent_id, entity_id),
    UNIQUE (agent_id, type, key)
);
CREATE INDEX kg_entities_key ON kg_entities (agent_id, key);
CREATE INDEX kg_entities_recent ON kg_entities (agent_id, last_seen_at);
CREATE TABLE kg_relations (
    seq         INTEGER PRIMARY KEY,
    agent_id    TEXT NOT NULL,
    relation_id TEXT NOT NULL,
    source_id   TEXT NOT NULL,
    relation    TEXT NOT NULL,
    target_id   TEXT NOT NULL,
    properties  TEXT NOT NULL DEFAULT '{}',
    valid_from  TEXT,
    invalid_at  TEXT,
    created_at  TEXT,
    sources     TEXT NOT NULL DEFAULT '[]',
    UNIQUE (agent_id, relation_id)
);
CREATE INDEX kg_relations_source ON kg_relations (agent_id, source_id);
CREATE INDEX kg_relations_target ON kg_relations (agent_id, target_id);
CREATE INDEX kg_relations_relation ON kg_relations (agent_id, relation);
"""

# The knowledge graph's extraction queue (``memory.graph_extraction``): one row per saved entry waiting for
# its entities and relations to be learned. The save inserts it in its own transaction and the worker deletes
# it in the transaction of the graph writes it made, so a crash loses no pending extraction.
_GRAPH_EXTRACTION = """
CREATE TABLE graph_extraction (
    seq       INTEGER PRIMARY KEY,
    fact_id   TEXT NOT NULL UNIQUE,
    agent_id  TEXT NOT NULL,
    queued_at TEXT NOT NULL
);
"""

# Skills, their versions, the skill-usage log and the feedback log (``storage.skills``). A skill is one row
# per (agent, name), archived or not; every write that changes it adds a version row. ``seq`` is insertion
# order (the tie-break of "newest first"); the usage and feedback logs are append-only until their purge.
_SKILLS_FEEDBACK = """
CREATE TABLE skills (
    seq          INTEGER PRIMARY KEY,
    agent_id     TEXT NOT NULL,
    name         TEXT NOT NULL,
    summary      TEXT NOT NULL,
    content      TEXT NOT NULL,
    see_also     TEXT NOT NULL DEFAULT '[]',
    metadata     TEXT NOT NULL DEFAULT '{}',
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    last_used_at TEXT,
    archived_at  TEXT,
    version      INTEGER NOT NULL,
    vector       BLOB,
    vector_model TEXT,
    UNIQUE (agent_id, name)
);
CREATE INDEX skills_archived ON skills (archived_at) WHERE archived_at IS NOT NULL;
CREATE TABLE skill_versions (
    agent_id    TEXT NOT NULL,
    name        TEXT NOT NULL,
    version     INTEGER NOT NULL,
    change      TEXT NOT NULL,
    recorded_at TEXT NOT NULL,
    summary     TEXT NOT NULL,
    content     TEXT NOT NULL,
    see_also    TEXT NOT NULL DEFAULT '[]',
    metadata    TEXT NOT NULL DEFAULT '{}',
    archived    INTEGER NOT NULL,
    PRIMARY KEY (agent_id, name, version)
) WITHOUT ROWID;
CREATE TABLE skill_usage (
    seq        INTEGER PRIMARY KEY,
    agent_id   TEXT NOT NULL,
    session_id TEXT NOT NULL,
    name       TEXT NOT NULL,
    used_at    TEXT NOT NULL
);
CREATE INDEX skill_usage_agent_at ON skill_usage (agent_id, used_at);
CREATE INDEX skill_usage_session ON skill_usage (agent_id, session_id);
CREATE INDEX skill_usage_at ON skill_usage (used_at);
CREATE TABLE feedback (
    seq         INTEGER PRIMARY KEY,
    feedback_id TEXT NOT NULL UNIQUE,
    agent_id    TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    kind        TEXT NOT NULL,
    rating      TEXT,
    comment     TEXT,
    entry_ids   TEXT NOT NULL DEFAULT '[]',
    skill_names TEXT NOT NULL DEFAULT '[]',
    created_at  TEXT NOT NULL
);
CREATE INDEX feedback_agent_at ON feedback (agent_id, created_at);
CREATE INDEX feedback_session ON feedback (agent_id, session_id);
CREATE INDEX feedback_at ON feedback (created_at);
"""

_SUPERSESSION_LOG = """
-- A contradicted entry stays unarchived with superseded_by set and leaves search: indexes must hear of it.
DROP TRIGGER fact_log_update;
CREATE TRIGGER fact_log_update
AFTER UPDATE OF content, tags, category, archived_at, superseded_by, user_id, session_id, expires_at ON facts
WHEN old.content IS NOT new.content OR old.tags IS NOT new.tags OR old.category IS NOT new.category
    OR old.archived_at IS NOT new.archived_at OR old.superseded_by IS NOT new.superseded_by
    OR old.user_id IS NOT new.user_id OR old.session_id IS NOT new.session_id OR old.expires_at IS NOT new.expires_at
BEGIN
    INSERT INTO fact_log (agent_id, fact_id) VALUES (new.agent_id, new.id);
END;
"""

_TIME_INDEX = """
-- Recall's named-time candidates (FactRepository.in_period): entries saved in a period, and entries whose
-- subject time (its first ten characters: a year, month or day) falls in it.
CREATE INDEX facts_created ON facts (agent_id, created_at);
CREATE INDEX facts_subject_time ON facts (agent_id, substr(json_extract(metadata, '$.subjectTime'), 1, 10));
"""

# The telemetry logs the dream learns from (``storage.logs``), once JSONL files in each host's home: every row
# the record as those files held it, with the columns readers filter by. AUTOINCREMENT: ``seq`` is the order
# of appending and is never reused, even after retention deleted the newest rows. ``context_injected`` is the
# context builder's delta filter, which goes with its session.
_ACTIVITY_LOGS = """
CREATE TABLE conversation_log (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id   TEXT NOT NULL,
    session_id TEXT NOT NULL,
    at         TEXT NOT NULL,
    record     TEXT NOT NULL
);
CREATE INDEX conversation_log_agent ON conversation_log (agent_id, session_id, seq);
CREATE INDEX conversation_log_session ON conversation_log (session_id, seq);
CREATE TABLE execution_log (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id   TEXT NOT NULL,
    session_id TEXT,
    at         TEXT NOT NULL,
    record     TEXT NOT NULL
);
CREATE INDEX execution_log_agent_at ON execution_log (agent_id, at, seq);
CREATE TABLE tool_call_log (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id   TEXT NOT NULL,
    session_id TEXT,
    at         TEXT NOT NULL,
    record     TEXT NOT NULL
);
CREATE INDEX tool_call_log_agent_at ON tool_call_log (agent_id, at, seq);
CREATE TABLE context_injected (
    agent_id    TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    entry_id    TEXT NOT NULL,
    injected_at TEXT NOT NULL,
    PRIMARY KEY (agent_id, session_id, entry_id),
    FOREIGN KEY (agent_id, session_id) REFERENCES sessions (agent_id, session_id) ON DELETE CASCADE
) WITHOUT ROWID;
"""

# Keys bound to users (issue 20): the users a key may name, a JSON array (["*"]: any user). A key created before
# this column keeps NULL: it may still name any user, as every key could then, and `reverie keys list` warns
# about it until it is bound (`reverie keys bind`). New keys always store an array ([] for none).
_KEY_USERS = """
ALTER TABLE api_keys ADD COLUMN users TEXT;
"""

# The dream lock's holder (issue 20): the pid and host of the process holding the lease, the heartbeat period it
# promised and its last heartbeat, so any process can tell a dead holder from a live one long before the lease
# runs out. A lease taken before these columns keeps NULLs: only its expiry ends it, as before.
_DREAM_HOLDER = """
ALTER TABLE dream_locks ADD COLUMN holder_pid INTEGER;
ALTER TABLE dream_locks ADD COLUMN holder_host TEXT;
ALTER TABLE dream_locks ADD COLUMN heartbeat_seconds REAL;
ALTER TABLE dream_locks ADD COLUMN heartbeat_at TEXT;
"""

# The entries a later one contradicted (superseded, not archived): search hands their matches to their
# successors (``memory.successor``), reading them again after each write of the agent — without this index a
# scan of the agent's current entries (55 ms at 100,000).
_REPLACED_INDEX = """
CREATE INDEX facts_replaced ON facts (agent_id, archived_at, last_seen_at)
    WHERE superseded_by IS NOT NULL AND archived_at IS NULL;
"""

MIGRATIONS: list[tuple[str, str]] = [
    ("0001_initial", _INITIAL),
    ("0002_vectors", _VECTORS),
    ("0003_sequence_index", _SEQUENCE),
    ("0004_fts_agent", _FTS_AGENT),
    ("0005_vectors_inline", _VECTORS_ROWID),
    ("0006_fact_log", _FACT_LOG),
    ("0007_aging", _AGING),
    ("0008_expansion", _EXPANSION),
    ("0009_dream", _DREAM),
    ("0010_conversation", _CONVERSATION),
    ("0011_working", _WORKING),
    ("0012_keys_usage", _KEYS_USAGE),
    ("0013_kv_graph", _KV_GRAPH),
    ("0014_graph_extraction", _GRAPH_EXTRACTION),
    ("0016_skills_feedback", _SKILLS_FEEDBACK),
    ("0017_supersession_log", _SUPERSESSION_LOG),
    ("0018_time_index", _TIME_INDEX),
    ("0019_activity_logs", _ACTIVITY_LOGS),
    ("0020_dream_holder", _DREAM_HOLDER),
    ("0021_key_users", _KEY_USERS),
    ("0022_replaced_index", _REPLACED_INDEX),
]

"""The composition root: builds the store and every service from Settings. The only module (with the
interfaces) that reads Settings or the environment.

On a read-only store (``mode="ro"``, or ``"read"`` on a file this process cannot write) the engine starts
no writer: no embedding, expansion, graph-extraction or memorize worker, no record of reads, no import of
legacy logs, no adoption of the embedding model; a write through a service raises ``StorageError``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from reverie.audit import MemoryAudit
from reverie.clock import Clock, SystemClock
from reverie.context.builder import ContextBuilder
from reverie.conversation.service import ConversationMemory
from reverie.core.coverage import Vocabulary, load_vocabulary
from reverie.core.stance_vocabulary import STANCE_FILE_NAME, load_stance_vocabulary
from reverie.dream.activity import ActivityTracker
from reverie.dream.ledger import DreamPassLedger
from reverie.dream.passes.base import Capability
from reverie.dream.service import DreamService
from reverie.engine import configs as service_configs
from reverie.engine import parts
from reverie.engine.dream import dream_passes
from reverie.errors import ReverieError
from reverie.graph.extraction import GraphExtractionQueue, extractable
from reverie.graph.service import KnowledgeGraph
from reverie.keys.service import ApiKeys
from reverie.kv.service import KvMemory
from reverie.llm.base import LLM
from reverie.llm.usage import UsageRecord, current_agent
from reverie.logs import JsonlFile, PrunableLog, StoredLog, import_legacy
from reverie.memory.aging import Aging
from reverie.memory.consolidate import SemanticConsolidation
from reverie.memory.dedup import Deduplicator
from reverie.memory.expansion import ExpansionQueue, expandable
from reverie.memory.explore import MemoryExplorer
from reverie.memory.lint import MemoryLint
from reverie.memory.longterm import LongTermMemory
from reverie.proactive.service import ProactiveMemory
from reverie.prompts import AUTO_MEMORIZE, GRAPH_EXTRACT, MEMORY_RULES, read_prompt
from reverie.recall.hybrid import HybridSearch
from reverie.recall.worker import EmbeddingWorker
from reverie.settings import Settings, home_from_env, load_settings
from reverie.skills import FeedbackStore, SkillStore
from reverie.skills.activity_logs import ExecutionLog, ToolCallLog
from reverie.storage import is_database_file, is_url, store_url
from reverie.storage.base import FactFilter, OpenMode, Store
from reverie.types import HealthReport, MemoryEntry, PurgeReport, StoreStats, UsageRow, UsageSummary
from reverie.usage import report as usage_report
from reverie.working.service import ToolResultStash, WorkingMemory

log = logging.getLogger("reverie")
VOCABULARY_FILE = "merge-coverage-vocabulary.json"
DREAM_LOG = "dream.jsonl"


class Reverie:
    """An open memory engine. Use ``reverie.open(...)`` to make one; close it (or use ``with``) when done.

    Attributes:
        memory: long-term memory (save, search, browse, archive, restore, history, ...).
        recall: the hybrid search component (BM25 + vectors) memory searches with.
        embedder: the embedding provider, or None when ``embedding.provider = "none"``.
        llm: the chat client (``reverie.llm.LLM``), or None when ``llm.provider = "none"`` (the default).
        embedding: the background embedding worker, or None without an embedder.
        lint: memory_lint, confidence and explain (``reverie.memory.lint``); reads only.
        explorer: the walk from an entry to related ones (``reverie.memory.explore``); reads only.
        consolidation: near-duplicate groups and their consolidation on an agent's request
            (``reverie.memory.consolidate``; the tools memory_semantic_duplicates and _consolidate).
        expansion: the background expansion of saves into focused facts, or None without an LLM (or with
            ``memory.expansion_enabled = false``).
        working: working memory (namespaced scratch with a TTL); ``working.for_namespace(...)`` opens a view.
        stash: the tool-result stash (parks oversized tool results under ``stash/{session}``).
        kv: key-value memory per agent (``reverie.kv.service``): set, get, update, delete, list by prefix.
        skills: the skill store per agent (``reverie.skills``): save, get, list, hybrid search, archive, restore,
            history, and the usage log (record_usage, usage_counts, co_usage, prefix_clusters, at_risk).
        feedback: the feedback store per agent (``reverie.skills.feedback``): corrections, session summaries,
            stale and wrong signals, tied to a session and optionally to entries or skills.
        executions: the execution log (``reverie.skills.activity_logs.ExecutionLog``, in the store): record and
            list logged multi-step executions, read by the execution-failure analysis.
        tool_calls: the tool-call log (``ToolCallLog``, in the store): every agent tool call served by the API
            and MCP is recorded there; read by the tool-success pass.
        graph: the knowledge graph per agent (``reverie.graph.service``): entities, relations, path, subgraph.
        graph_extraction: the background extraction of saved entries into the graph
            (``reverie.graph.extraction``; ``mode`` "llm" or "rules"), or None with ``graph.extraction = "off"``.
        conversation: conversation memory: sessions, turns, the replay window, the archive and session
            compaction (``reverie.conversation.service``); ``conversation_log`` is its log (``reverie.logs.StoredLog``).
        proactive: proactive memory (``reverie.proactive.service``): auto_memorize after a turn, auto_retrieve
            before one, user-level memory shared by a user's agents, decay, the cap, auto-consolidation.
        keys: API keys and scopes for the HTTP API and the MCP server (``reverie.keys.service.ApiKeys``).
        settings: the settings it was built from.
        store: the storage backend (services are the usual way in; the agent tools never read it).
    """

    def __init__(
        self, settings: Settings, *, clock: Clock | None = None, reindex: bool = False, mode: OpenMode = "rw"
    ) -> None:
        self.settings = settings
        aging = service_configs.aging_config(settings)  # a bad [decay] section fails before anything is opened
        extraction = parts.extraction_mode(settings)  # so does "llm" extraction without an LLM
        self._vocabulary: tuple[tuple[tuple[int, int] | None, ...], Vocabulary] | None = None
        self.clock: Clock = clock or SystemClock()
        self.store: Store = parts.store(settings, self.clock, mode)
        writable = not self.store.read_only
        extraction = extraction if writable else None  # extraction writes the graph: off on a read-only store
        try:
            self.embedder = parts.embedder(settings)
            if self.embedder is not None:
                parts.check_model(self.store, self.embedder, adopt=reindex)
            self._vector_backend = parts.vector_backend(settings, self.store, self.embedder)
            self.llm: LLM | None = parts.llm(settings, self.clock)
        except BaseException:
            self.store.close()
            raise
        if self.llm is not None:
            self.llm.ledger.add_listener(self._record_usage)
        self.keys = ApiKeys(self.store, self.clock)
        model_floor = getattr(self.embedder, "default_min_similarity", parts.DEFAULT_MIN_SIMILARITY)
        model_strong = getattr(self.embedder, "strong_similarity", None)
        self.recall = HybridSearch(
            self.store,
            self.embedder,
            service_configs.recall_config(settings, model_floor, model_strong),
            vectors=self._vector_backend,
            stance=lambda: self.coverage_vocabulary().stance,
        )
        self.aging = Aging(
            self.store,
            self.clock,
            aging,
            model=self.embedder.model_id if self.embedder is not None else None,
            vocabulary=self.coverage_vocabulary,
        )
        self.dedup = Deduplicator(
            self.store,
            self.clock,
            service_configs.dedup_config(settings),
            vocabulary=self.coverage_vocabulary,
            recall=self.recall,
        )
        self.embedding: EmbeddingWorker | None = None
        if self.embedder is not None and writable:
            self.embedding = EmbeddingWorker(
                self.store,
                self.embedder,
                self.clock,
                max_input_chars=settings.embedding.max_input_chars,
                on_embedded=self.dedup.fold_embedded,
            )
            if settings.embedding.background:
                self.embedding.start()
        self.expansion: ExpansionQueue | None = None
        expands = self.llm is not None and settings.memory.expansion_enabled and writable
        self.activity = ActivityTracker(self.store.dream, self.clock)
        self.lint = MemoryLint(
            self.store,
            self.clock,
            service_configs.lint_config(settings),
            vocabulary=self.coverage_vocabulary,
            recall=self.recall,
            retention=self.aging.score,
        )
        self.memory = LongTermMemory(
            self.store,
            self.clock,
            service_configs.longterm_config(settings),
            recall=self.recall,
            on_saved=self._saved,
            dedup=self.dedup,
            on_read=self.aging.note_reads if writable else None,
            expand=expandable if expands else None,
            extract=extractable if extraction is not None else None,
            confidence=self.lint.confidences,
            on_activity=self.activity.note if writable else None,  # reads note activity: a write
            stance=lambda: self.coverage_vocabulary().stance,
        )
        self.explorer = MemoryExplorer(self.store, self.clock, self.recall)
        self.consolidation = SemanticConsolidation(
            self.store,
            self.clock,
            service_configs.semantic_config(settings),
            vocabulary=self.coverage_vocabulary,
            model=self.embedder.model_id if self.embedder is not None else None,
        )
        if expands and self.llm is not None:
            self.expansion = ExpansionQueue(self.store, self.llm, self.clock, self.memory, rules=self.memory_rules)
            if settings.memory.expansion_background:
                self.expansion.start()
        self.working = WorkingMemory(
            self.store, self.clock, service_configs.working_config(settings, model_floor), embedder=self.embedder
        )
        self.stash = ToolResultStash(self.working)
        self.kv = KvMemory(self.store, self.clock, service_configs.kv_config(settings))
        self.graph = KnowledgeGraph(self.store, self.clock, service_configs.graph_config(settings))
        self.skills = SkillStore(
            self.store,
            self.clock,
            service_configs.skills_config(settings),
            embedder=self.embedder,
            floor=lambda agent_id: self.recall.floor(agent_id, None),
        )
        self.feedback = FeedbackStore(self.store, self.clock, log_retention_days=settings.skills.log_retention_days)
        self.graph_extraction: GraphExtractionQueue | None = None
        if extraction is not None:
            self.graph_extraction = GraphExtractionQueue(
                self.store,
                self.graph,
                llm=self.llm if extraction == "llm" else None,
                prompt=self.graph_extract_prompt,
                config=service_configs.extraction_config(settings),
            )
            if settings.graph.extraction_background:
                self.graph_extraction.start()
        self.dream_log = JsonlFile(settings.home / "logs" / DREAM_LOG, "dream")
        self._logs: list[PrunableLog] = [self.dream_log]
        # The conversation, execution and tool-call logs live in the store, shared by every process and host.
        self.conversation_log = StoredLog(self.store.logs, "conversation", per_session=True)
        self.register_log(self.conversation_log)
        self.executions = ExecutionLog(StoredLog(self.store.logs, "executions"), self.clock)
        self.register_log(self.executions.log)
        flush = settings.skills.tool_call_log_flush_ms / 1000  # group commit: one fsync per interval, not per call
        self.tool_calls = ToolCallLog(StoredLog(self.store.logs, "tool-calls", flush_seconds=flush), self.clock)
        self.register_log(self.tool_calls.log)
        if writable:
            import_legacy(settings.home / "logs", self.store, now=self.clock.now())  # older versions' JSONL, once
        self.proactive = ProactiveMemory(
            self.store,
            self.clock,
            self.memory,
            self.recall,
            self.kv,
            service_configs.proactive_config(settings),
            llm=self.llm,
            prompt=self.auto_memorize_prompt,
            graph=extraction is not None,
            on_read=self.aging.note_reads if writable else None,
        )
        p = settings.proactive
        if p.enabled and p.memorize_on_turn and p.memorize_background and writable:
            self.proactive.start()
        self.conversation = ConversationMemory(
            self.store,
            self.clock,
            service_configs.conversation_config(settings),
            log=self.conversation_log,
            llm=self.llm,
            home=settings.home,
            on_activity=self.activity.note,
            on_turn=self.proactive.on_turn,
        )
        self.context = ContextBuilder(
            self.memory,
            self.working,
            self.conversation,
            self.clock,
            service_configs.context_config(settings),
            injected=self.store.injected,
            proactive=self.proactive.for_context,
            shared_candidates=self.recall.shared_candidates,
        )
        self.audit = MemoryAudit(self.store, self.clock, settings.home, service_configs.audit_config(settings))
        self.dream = self._dream_service()

    def _dream_service(self) -> DreamService:
        """The dream service with the passes ``[dream]`` enables (``engine_dream.dream_passes``: their order),
        the capabilities they may need and the serve loop's other jobs."""
        d = self.settings.dream
        passes = dream_passes(self)
        capabilities = {
            c for c, present in ((Capability.LLM, self.llm), (Capability.EMBEDDER, self.embedder)) if present
        } | {  # these stores are always there
            Capability.SKILLS,
            Capability.FEEDBACK,
            Capability.CONVERSATION_LOG,
            Capability.EXECUTION_LOG,
            Capability.TOOL_CALL_LOG,
        }
        jobs: list[Callable[[datetime], object]] = [
            self.conversation.purge_job,  # deleted sessions go after the retention
            self.kv.purge_job,  # deleted key-value items too
            self.skills.purge_job,  # archived skills after the retention, old usage rows after theirs
            self.feedback.purge_job,  # old feedback signals after the log retention
            lambda _now: self.working.maybe_sweep(),  # expired working memory, hourly
        ]
        if self.settings.audit.enabled:
            jobs.append(self.audit.job)
        return DreamService(
            self.store,
            self.clock,
            passes,
            config=service_configs.dream_config(self.settings),
            ledger=DreamPassLedger(
                self.store.dream, enabled=d.change_gate_enabled, max_skip=timedelta(days=d.max_skip_days)
            ),
            home=self.settings.home,
            llm=self.llm,
            capabilities=frozenset(capabilities),
            vocabulary=self.coverage_vocabulary,
            embedding_model=self.embedder.model_id if self.embedder is not None else None,
            jobs=jobs,
        )

    def related_ids(self, entry: MemoryEntry, limit: int) -> list[str]:
        """Ids recall finds for an entry's text in its own scope (the consolidation pass's related entries)."""
        flt = FactFilter(scope=entry.scope, now=self.clock.now())
        hits = self.recall.search(entry.content[:2000], flt, limit + 1)
        return [h.entry.id for h in hits if h.entry.id != entry.id]

    def _record_usage(self, record: UsageRecord) -> None:
        """The ledger listener: every LLM call becomes a row of the usage log, attributed to the agent the
        calling code works for (``reverie.llm.usage.agent_context``). A store that refuses the row costs
        the row, never the call."""
        row = UsageRow(
            at=record.at,
            agent_id=current_agent(),
            provider=self.settings.llm.provider,
            model=record.model,
            purpose=record.purpose,
            prompt_tokens=record.prompt_tokens or 0,
            completion_tokens=record.completion_tokens or 0,
            cost=record.cost,
            ok=record.ok,
        )
        try:
            self.store.usage.add(row)
        except ReverieError as exc:
            log.warning("could not record LLM usage (%s, %s): %s", row.agent_id, row.purpose, exc)

    def usage(
        self, since: datetime | None = None, until: datetime | None = None, agent_id: str | None = None
    ) -> list[UsageSummary]:
        """LLM calls, failures, tokens and cost per agent, provider and model, for calls at or after
        ``since`` and before ``until`` (None: unbounded), of one agent or all. Raises ``ValidationError``."""
        return usage_report.summary(self.store, since, until, agent_id)

    def usage_calls(
        self, since: datetime | None = None, until: datetime | None = None, agent_id: str | None = None
    ) -> list[UsageRow]:
        """Every LLM call in the period (as ``usage``), oldest first."""
        return usage_report.calls(self.store, since, until, agent_id)

    def logs(self) -> list[PrunableLog]:
        """The append-only logs the log-retention pass caps."""
        return list(self._logs)

    def register_log(self, log_: PrunableLog) -> None:
        """Put another append-only log under the dream's log retention."""
        self._logs.append(log_)

    def _saved(self) -> None:
        """Entries were saved: wake the background workers."""
        if self.embedding is not None:
            self.embedding.notify()
        if self.expansion is not None:
            self.expansion.notify()
        if self.graph_extraction is not None:
            self.graph_extraction.notify()

    def memory_rules(self) -> str:
        """The expansion prompt, re-read on every call (an edit takes effect at the next run):
        ``<home>/memory-rules.md`` when present and not empty, else the built-in one."""
        return read_prompt(MEMORY_RULES, self.settings.home)

    def auto_memorize_prompt(self) -> str:
        """Proactive memory's extraction prompt, re-read on every call: ``<home>/auto-memorize.md`` when
        present and not empty, else the built-in one."""
        return read_prompt(AUTO_MEMORIZE, self.settings.home)

    def graph_extract_prompt(self) -> str:
        """The graph extraction prompt, re-read on every run: ``<home>/graph-extract.md`` when present and
        not empty, else the built-in one."""
        return read_prompt(GRAPH_EXTRACT, self.settings.home)

    def coverage_vocabulary(self) -> Vocabulary:
        """The merge coverage vocabulary: ``<home>/merge-coverage-vocabulary.json`` when present, else the
        built-in baseline, carrying the stance vocabulary (``<home>/stance-vocabulary.json`` over the
        built-in languages). An edited file takes effect at the next use (seed 001); the files are parsed
        again only when their modification time or size changes, so a save does not read them each time."""
        paths = (self.settings.home / VOCABULARY_FILE, self.settings.home / STANCE_FILE_NAME)
        key = tuple(_file_key(path) for path in paths)
        cached = self._vocabulary
        if cached is None or cached[0] != key:
            coverage = load_vocabulary(paths[0])
            cached = (key, replace(coverage, stance=load_stance_vocabulary(paths[1])))
            self._vocabulary = cached
        return cached[1]

    @property
    def url(self) -> str:
        return self.store.url

    # -- maintenance -----------------------------------------------------------------------------------
    def stats(self) -> StoreStats:
        return self.store.stats()

    def check(self, *, repair: bool = False, quick: bool = False) -> HealthReport:
        """The store's health (``Store.check``); ``quick``: only its fast integrity check."""
        return self.store.check(repair=repair, quick=quick)

    def backup(self, destination: str | Path) -> Path:
        path = Path(destination).expanduser().resolve()
        self.store.backup(path)
        return path

    def restore_backup(self, source: str | Path) -> Path:
        """Replace the store's contents with a backup. The current contents are first saved to
        ``<home>/backups/pre-restore-<time>.db`` (returned), so a restore never loses anything."""
        stamp = self.clock.now().strftime("%Y%m%dT%H%M%S%fZ")
        safety = self.settings.home / "backups" / f"pre-restore-{stamp}.db"
        self.store.backup(safety)
        self.store.restore_backup(Path(source).expanduser())
        return safety

    def vacuum(self) -> None:
        self.store.vacuum()

    def embed_pending(self, limit: int | None = None) -> int:
        """Embed every entry still waiting for its vector, now, in this thread (ingestion scripts, tests,
        one-shot CLI commands). Returns how many were embedded; 0 without an embedder."""
        return 0 if self.embedding is None else self.embedding.embed_pending(limit)

    def expand_pending(self, limit: int | None = None) -> int:
        """Expand every saved entry still waiting for its expansion, now, in this thread (tests, one-shot CLI
        commands). Returns how many were expanded; 0 without an LLM. Stops early while the LLM is busy with a
        user turn; raises ``LLMError`` when the LLM fails (the entries stay pending)."""
        return 0 if self.expansion is None else self.expansion.expand_pending(limit)

    def extract_pending(self, limit: int | None = None) -> int:
        """Extract every saved entry still queued for the knowledge graph, now, in this thread (tests, one-shot
        CLI commands). Returns how many left the queue; 0 with ``graph.extraction = "off"``. With the LLM, stops
        early while it is busy with a user turn, and raises ``LLMError`` when it fails (the entries stay queued)."""
        return 0 if self.graph_extraction is None else self.graph_extraction.extract_pending(limit)

    def embedding_status(self) -> dict[str, object]:
        """The active model, vectors per model, and how many entries wait for a vector."""
        counts = self.store.vectors.counts()
        stats = self.store.stats()
        model = self.embedder.model_id if self.embedder else None
        total = stats.live + stats.archived
        return {
            "model": model,
            "vectors": counts,
            "pending": 0 if model is None else max(0, total - counts.get(model, 0)),
            "last_error": self.embedding.last_error if self.embedding else None,
        }

    def purge(self, *, agent_id: str | None = None) -> PurgeReport:
        return self.memory.purge(agent_id=agent_id)

    # -- lifecycle -------------------------------------------------------------------------------------
    def close(self) -> None:
        self.dream.stop()
        if self.expansion is not None:
            self.expansion.stop(0)  # ask first: closing the client below then cuts its call short
        if self.graph_extraction is not None:
            self.graph_extraction.stop(0)
        self.proactive.stop(0)
        if self.llm is not None:
            self.llm.close()
        if self.expansion is not None:
            self.expansion.stop()
        if self.graph_extraction is not None:
            self.graph_extraction.stop()
        self.proactive.stop()
        if self.embedding is not None:
            self.embedding.stop()
        self.recall.close()
        if self._vector_backend is not None:
            self._vector_backend.close()
        self.tool_calls.log.close()  # the tool calls waiting for their group commit (a refused batch is logged)
        try:
            if not self.store.read_only:
                self.aging.flush_reads()  # reads noted since the last flush keep their entries warm
                self.proactive.flush_accesses()  # so do proactive memory's accesses
        except ReverieError as exc:  # a store that cannot be written now must still close
            log.warning("could not record recent reads: %s", exc)
        self.store.close()

    def __enter__(self) -> Reverie:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def open(  # noqa: A001
    target: str | Path | None = None,
    *,
    clock: Clock | None = None,
    reindex: bool = False,
    mode: OpenMode = "rw",
    **overrides: Any,
) -> Reverie:
    """Open a Reverie store.

    Args:
        target: a data directory (the store is ``<dir>/reverie.db`` and settings ``<dir>/reverie.toml``),
            a ``.db`` file, or a store URL (``sqlite:////abs/path.db``). None: ``REVERIE_HOME`` or
            ``~/.reverie``.
        clock: where time comes from (a ``FakeClock`` in tests); the system clock by default.
        reindex: adopt the configured embedding model even though the store holds vectors of another one
            (``reverie reindex`` then re-embeds); without it such a mismatch is a ``ModelMismatch``.
        mode: "rw" (the default: read and write; a missing store is created), "read" (the store must exist,
            and is opened read-only when this process cannot write its file) or "ro" (read-only; it must
            exist). Read-only: nothing is written, no worker starts, and a write raises ``StorageError``.
        **overrides: settings sections as dicts, e.g. ``memory={"max_content_chars": 5000}``.

    Raises:
        ConfigError: unreadable or invalid settings, or an unknown URL scheme.
        StorageError: the store cannot be opened: it is missing (modes "read" and "ro"), an existing file that
            is not a store (empty, not SQLite, another program's database; never overwritten), read-only in
            mode "rw", or read-only with migrations pending.
    """
    overrides = dict(overrides)
    if target is None or not (is_url(target) or is_database_file(Path(target).expanduser())):
        home = home_from_env(target)
    else:
        # A URL keeps the default home; a database file's directory is its home (settings beside it).
        home = home_from_env(None) if is_url(target) else Path(target).expanduser().resolve().parent
        overrides["store"] = {**(overrides.get("store") or {}), "url": store_url(target)}
    if mode == "rw":
        home.mkdir(parents=True, exist_ok=True)  # a reader creates nothing: a mistyped home is "no store"
    return Reverie(load_settings(home, overrides), clock=clock, reindex=reindex, mode=mode)


def _file_key(path: Path) -> tuple[int, int] | None:
    """A file's modification time and size (None when it is missing): a cache key that changes on edit."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size

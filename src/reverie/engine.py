"""The composition root: builds the store and every service from Settings. The only module (with the
interfaces) that reads Settings or the environment."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any

from reverie.clock import Clock, SystemClock
from reverie.embed.base import Embedder
from reverie.embed.resolve import make_embedder
from reverie.errors import ConfigError, ModelMismatch
from reverie.memory.longterm import LongTermConfig, LongTermMemory
from reverie.recall.http_backend import HttpVectorBackend
from reverie.recall.hybrid import HybridSearch, RecallConfig
from reverie.recall.worker import EmbeddingWorker
from reverie.settings import Settings, home_from_env, load_settings
from reverie.storage import is_database_file, is_url, open_store, store_url
from reverie.storage.base import Store, StoreOptions
from reverie.types import HealthReport, PurgeReport, StoreStats


class Reverie:
    """An open memory engine. Use ``reverie.open(...)`` to make one; close it (or use ``with``) when done.

    Attributes:
        memory: long-term memory (save, search, browse, archive, restore, history, ...).
        recall: the hybrid search component (BM25 + vectors) memory searches with.
        embedder: the embedding provider, or None when ``embedding.provider = "none"``.
        embedding: the background embedding worker, or None without an embedder.
        settings: the settings it was built from.
        store: the storage backend (for tools that need it; services are the usual way in).
    """

    def __init__(self, settings: Settings, *, clock: Clock | None = None, reindex: bool = False) -> None:
        self.settings = settings
        self.clock: Clock = clock or SystemClock()
        self.store: Store = _open_store(settings, self.clock)
        try:
            self.embedder = _embedder(settings)
            if self.embedder is not None:
                _check_model(self.store, self.embedder, adopt=reindex)
            self._vector_backend = _vector_backend(settings, self.store, self.embedder)
        except BaseException:
            self.store.close()
            raise
        r = settings.recall
        self.recall = HybridSearch(
            self.store,
            self.embedder,
            RecallConfig(
                semantic_weight=r.semantic_weight,
                candidates=r.candidates,
                min_similarity=r.min_similarity,
                agent_min_similarity=tuple(sorted(r.agent_min_similarity.items())),
                model_min_similarity=getattr(self.embedder, "default_min_similarity", DEFAULT_MIN_SIMILARITY),
                neighbour_share=r.neighbour_share,
            ),
            vectors=self._vector_backend,
        )
        self.embedding: EmbeddingWorker | None = None
        if self.embedder is not None:
            self.embedding = EmbeddingWorker(
                self.store, self.embedder, self.clock, max_input_chars=settings.embedding.max_input_chars
            )
            if settings.embedding.background:
                self.embedding.start()
        self.memory = LongTermMemory(
            self.store,
            self.clock,
            _longterm_config(settings),
            recall=self.recall,
            on_saved=self.embedding.notify if self.embedding else None,
        )

    @property
    def url(self) -> str:
        return self.store.url

    # -- maintenance -----------------------------------------------------------------------------------
    def stats(self) -> StoreStats:
        return self.store.stats()

    def check(self, *, repair: bool = False) -> HealthReport:
        return self.store.check(repair=repair)

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
        if self.embedding is not None:
            self.embedding.stop()
        if self._vector_backend is not None:
            self._vector_backend.close()
        self.store.close()

    def __enter__(self) -> Reverie:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def open(  # noqa: A001
    target: str | Path | None = None, *, clock: Clock | None = None, reindex: bool = False, **overrides: Any
) -> Reverie:
    """Open a Reverie store.

    Args:
        target: a data directory (the store is ``<dir>/reverie.db`` and settings ``<dir>/reverie.toml``),
            a ``.db`` file, or a store URL (``sqlite:////abs/path.db``). None: ``REVERIE_HOME`` or
            ``~/.reverie``.
        clock: where time comes from (a ``FakeClock`` in tests); the system clock by default.
        reindex: adopt the configured embedding model even though the store holds vectors of another one
            (``reverie reindex`` then re-embeds); without it such a mismatch is a ``ModelMismatch``.
        **overrides: settings sections as dicts, e.g. ``memory={"max_content_chars": 5000}``.

    Raises:
        ConfigError: unreadable or invalid settings, or an unknown URL scheme.
        StorageError: the store cannot be opened.
    """
    overrides = dict(overrides)
    if target is None or not (is_url(target) or is_database_file(Path(target).expanduser())):
        home = home_from_env(target)
    else:
        # A URL keeps the default home; a database file's directory is its home (settings beside it).
        home = home_from_env(None) if is_url(target) else Path(target).expanduser().resolve().parent
        overrides["store"] = {**(overrides.get("store") or {}), "url": store_url(target)}
    home.mkdir(parents=True, exist_ok=True)
    return Reverie(load_settings(home, overrides), clock=clock, reindex=reindex)


ACTIVE_MODEL_KEY = "embedding_model"
DEFAULT_MIN_SIMILARITY = 0.5  # seed 000's MinSimilarityThreshold, for models we have not calibrated


def _open_store(settings: Settings, clock: Clock) -> Store:
    s = settings.store
    return open_store(
        s.url or store_url(settings.home),
        now=clock.now(),
        options=StoreOptions(
            busy_timeout_ms=s.busy_timeout_ms, lock_wait_seconds=s.lock_wait_seconds, synchronous=s.synchronous
        ),
    )


def _embedder(settings: Settings) -> Embedder | None:
    e = settings.embedding
    return make_embedder(
        e.provider,
        endpoint=e.endpoint,
        model=e.model,
        api_key=e.api_key,
        dim=e.dim,
        timeout=e.timeout_seconds,
        max_input_chars=e.max_input_chars,
        threads=e.threads,
    )


def _vector_backend(settings: Settings, store: Store, embedder: Embedder | None) -> HttpVectorBackend | None:
    """The external vector backend ``recall.vector_backend`` names; None for the in-process index (or
    without an embedder, when no vector search runs at all). Settings validation has already refused an
    unknown backend, or "http" without a URL, by name."""
    r = settings.recall
    if r.vector_backend == "memory" or embedder is None:
        return None
    if r.vector_store_url is None:  # only reachable with unvalidated settings (model_construct)
        raise ConfigError('recall.vector_backend = "http" needs recall.vector_store_url')
    return HttpVectorBackend(store, r.vector_store_url, embedder.model_id, embedder.dim)


def _check_model(store: Store, embedder: Embedder, *, adopt: bool) -> None:
    """Refuse to mix embedding models: vectors of another model in the store need ``reverie reindex``."""
    active = store.meta.get(ACTIVE_MODEL_KEY)
    if active is not None and active != embedder.model_id and not adopt and store.vectors.counts().get(active):
        raise ModelMismatch(
            f"the store's vectors were made by {active!r} but the configured embedder is {embedder.model_id!r}; "
            "run `reverie reindex` to re-embed everything with the new model, or configure the old one"
        )
    if active != embedder.model_id:
        store.meta.set(ACTIVE_MODEL_KEY, embedder.model_id)


def _longterm_config(settings: Settings) -> LongTermConfig:
    m = settings.memory
    return LongTermConfig(
        max_content_chars=m.max_content_chars,
        default_category=m.default_category,
        default_importance=m.default_importance,
        default_tier=m.default_tier,
        search_limit=m.search_limit,
        browse_limit=m.browse_limit,
        archive_retention_days=m.archive_retention_days,
        protect_importance=m.pruning_protection_importance,
        protect_reinforcement=m.pruning_protection_reinforcement_count,
    )

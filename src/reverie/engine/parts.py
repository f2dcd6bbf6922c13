"""The engine's parts resolved from Settings: the store, the embedder (and the model check), the vector
backend, the LLM, the graph-extraction mode. Called by the composition root (``engine/root.py``) only."""

from __future__ import annotations

from reverie.clock import Clock
from reverie.embed.base import Embedder
from reverie.embed.resolve import make_embedder
from reverie.errors import ConfigError, ModelMismatch
from reverie.graph.extraction import resolve_mode
from reverie.llm.base import LLM
from reverie.llm.resolve import make_llm
from reverie.llm.usage import Prices, UsageLedger
from reverie.recall.http_backend import HttpVectorBackend
from reverie.recall.index import VectorIndex
from reverie.recall.store_backend import StoreVectorSearch
from reverie.settings import Settings, config_from
from reverie.storage import open_store, store_url
from reverie.storage.base import NearestVectors, OpenMode, Store, StoreOptions

ACTIVE_MODEL_KEY = "embedding_model"
DEFAULT_MIN_SIMILARITY = 0.5  # seed 000's MinSimilarityThreshold, for models we have not calibrated


def store(settings: Settings, clock: Clock, mode: OpenMode = "rw") -> Store:
    s = settings.store
    return open_store(
        s.url or store_url(settings.home), now=clock.now(), options=config_from(StoreOptions, s), mode=mode
    )


def embedder(settings: Settings) -> Embedder | None:
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


def vector_backend(
    settings: Settings, store: Store, embedder: Embedder | None
) -> HttpVectorBackend | VectorIndex | StoreVectorSearch | None:
    """The vector backend ``recall.vector_backend`` names: the in-process index (with its ANN threshold),
    the store's own nearest-neighbour search, or the external service; "auto" is the store's search when it
    has one (``NearestVectors``), else the in-process index. None without an embedder, when no vector search
    runs at all. Settings validation has already refused an unknown backend, or "http" without a URL, by
    name; "store" on a store that cannot search is refused here, embedder or not."""
    r = settings.recall
    if r.vector_backend == "store" and not isinstance(store.vectors, NearestVectors):
        raise ConfigError(
            f'recall.vector_backend = "store" needs a store that searches vectors itself (PostgreSQL with pgvector);'
            f' {store.url} does not: use "memory" (or "auto")'
        )
    if embedder is None:
        return None
    if r.vector_backend in ("store", "auto") and isinstance(store.vectors, NearestVectors):
        return StoreVectorSearch(store.vectors, embedder.model_id, embedder.dim)
    if r.vector_backend in ("memory", "auto"):
        return VectorIndex(store, embedder.model_id, embedder.dim, ann_threshold=r.ann_threshold)
    if r.vector_store_url is None:  # only reachable with unvalidated settings (model_construct)
        raise ConfigError('recall.vector_backend = "http" needs recall.vector_store_url')
    return HttpVectorBackend(store, r.vector_store_url, embedder.model_id, embedder.dim)


def check_model(store: Store, embedder: Embedder, *, adopt: bool) -> None:
    """Refuse to mix embedding models: vectors of another model in the store need ``reverie reindex``."""
    active = store.meta.get(ACTIVE_MODEL_KEY)
    if active is not None and active != embedder.model_id and not adopt and store.vectors.counts().get(active):
        raise ModelMismatch(
            f"the store's vectors were made by {active!r} but the configured embedder is {embedder.model_id!r}; "
            "run `reverie reindex` to re-embed everything with the new model, or configure the old one"
        )
    if active != embedder.model_id and not store.read_only:  # a read-only store keeps its record as it is
        store.meta.set(ACTIVE_MODEL_KEY, embedder.model_id)


def extraction_mode(settings: Settings) -> str | None:
    """``[graph] extraction`` resolved: "llm", "rules", or None (off). "llm" without an LLM is a ConfigError."""
    try:
        return resolve_mode(settings.graph.extraction, has_llm=settings.llm.provider != "none")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def llm(settings: Settings, clock: Clock) -> LLM | None:
    s = settings.llm
    return make_llm(
        s.provider,
        endpoint=s.endpoint,
        model=s.model,
        api_key=s.api_key,
        connect_timeout=s.connect_timeout_seconds,
        timeout=s.timeout_seconds,
        max_retries=s.max_retries,
        backoff_seconds=s.backoff_seconds,
        prices=Prices(s.price_input_per_mtok, s.price_output_per_mtok),
        ledger=UsageLedger(clock=clock),
    )

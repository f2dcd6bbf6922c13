"""The errors Reverie raises. Every public entry point raises one of these, never a bare driver error.

Invariant: an operation that raises leaves the store exactly as it was.
"""

from __future__ import annotations

import errno


class ReverieError(Exception):
    """Base class of every error Reverie raises on purpose."""


class ValidationError(ReverieError, ValueError):
    """The caller's input was rejected; nothing was written.

    ``field`` names the offending input so an interface can point at it.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class NotFound(ReverieError, LookupError):
    """No entry (or version) with that id is visible in the caller's scope."""


class Conflict(ReverieError):
    """The write collides with existing state (a duplicate id, a stale version)."""


class StorageError(ReverieError):
    """The backend failed (corruption, a lock held too long, a full disk); nothing was half-written."""


class StoreBusy(StorageError):
    """Another process held the write lock for longer than the configured wait."""


class StorageFull(StorageError):
    """The disk holding the store (or a log file) is full, or a file reached its size limit (a quota,
    ``ulimit -f``). The write was rolled back: nothing of it was written, and every write acknowledged
    before it is still there. Free space, then retry. ``path`` names the file that could not grow."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path

    @classmethod
    def at(cls, path: object, cause: object = None) -> StorageFull:
        """The error for ``path``, with the driver's or the OS's words as ``cause``."""
        why = f" ({cause})" if cause else ""
        return cls(f"the disk holding {path} is full{why}: free space, then retry; nothing was written", path=str(path))

    @classmethod
    def of(cls, exc: OSError, path: object) -> StorageFull | None:
        """The error for an OS error writing ``path`` that says the file could not grow (no space left, a disk
        quota, a file-size limit); None for any other OS error."""
        return cls.at(path, exc.strerror) if exc.errno in NO_SPACE_ERRNOS else None


# The OS's words for "this file cannot grow": no space left, a disk quota, a file-size limit (``ulimit -f``).
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


class StoreUnavailable(StorageError):
    """The database server cannot be reached (down, restarting, refusing connections) within the configured
    ``store.connect_timeout_seconds``. Nothing was written; retry after ``retry_after`` seconds (an HTTP
    API answers 503 with that ``Retry-After``). Reverie reconnects by itself once the server is back."""

    def __init__(self, message: str, *, retry_after: float = 5.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ConfigError(ReverieError):
    """Settings could not be read or are contradictory."""


class EmbeddingError(ReverieError):
    """The embedder failed or timed out. Saves never fail for it (the entry waits for its vector);
    searches fall back to BM25 and say so."""


class ModelMismatch(ConfigError):
    """Vectors of one embedding model met another (stored vs configured, or two dimensions)."""


class VectorBackendError(ReverieError):
    """The external vector backend could not answer: connection refused, a timeout, a non-2xx status,
    or a body that is not the contract's JSON or exceeds the size cap. A search through it raises this
    (hybrid recall does not swallow it); nothing in the store was changed."""


class LLMError(ReverieError):
    """The LLM gave no usable answer: the endpoint failed after its retries, or the answer held no JSON
    object fitting the schema. Nothing was applied from the call (a pass retries it next cycle).

    ``status`` is the last HTTP status (None when no response arrived). ``reason`` names the failure:
    ``http``, ``timeout``, ``connection``, ``response`` (a body that is not a chat completion), ``closed``,
    or, for the answer itself, ``empty``, ``unfinished_reasoning``, ``no_object``, ``truncated``,
    ``invalid`` (not JSON) and ``schema`` (JSON that fails the schema).
    """

    def __init__(self, message: str, *, status: int | None = None, reason: str = "http") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


# The machine-readable kind of each error, most specific first (StoreBusy, StoreUnavailable and StorageFull are
# StorageErrors): the HTTP API's ``error`` field and the CLI's ``--json`` errors both name them so.
ERROR_KINDS: tuple[tuple[type[ReverieError], str], ...] = (
    (ValidationError, "validation"),
    (NotFound, "not_found"),
    (Conflict, "conflict"),
    (LLMError, "llm"),
    (VectorBackendError, "vector_backend"),
    (StoreBusy, "busy"),
    (StoreUnavailable, "unavailable"),
    (StorageFull, "storage_full"),
    (EmbeddingError, "embedding"),
)
# Everything else (a damaged store, the configuration, an embedding-model mismatch): the HTTP API's 500.
OTHER_KIND = "server"


def error_kind(exc: BaseException) -> str:
    """The kind of ``exc`` as ``ERROR_KINDS`` names it; ``OTHER_KIND`` for any other error."""
    return next((kind for error, kind in ERROR_KINDS if isinstance(exc, error)), OTHER_KIND)

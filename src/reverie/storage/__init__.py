"""Storage: the contract (``base``), the backends, and the one resolver from a URL to a backend."""

from reverie.storage.resolve import (
    is_database_file,
    is_url,
    open_store,
    pending_migrations,
    store_exists,
    store_url,
)

__all__ = ["is_database_file", "is_url", "open_store", "pending_migrations", "store_exists", "store_url"]

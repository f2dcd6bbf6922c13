"""The PostgreSQL + pgvector backend (``postgresql://…``): the scale-out path."""

from reverie.storage.postgres.store import PgStore

__all__ = ["PgStore"]

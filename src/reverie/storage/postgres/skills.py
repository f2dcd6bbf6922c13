"""Skills on PostgreSQL: ``SqlSkills`` (``sql/skills.py``) with the one column PostgreSQL stores differently.

Invariants:
- A skill's vector is pgvector's ``vector`` (no fixed dimension: skills are scored in the process, never
  through an index), written from and read back as the same float32 bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from reverie.storage.postgres.database import PgDatabase
from reverie.storage.sql.dialect import POSTGRES
from reverie.storage.sql.skills import SqlSkills


class PgSkills(SqlSkills):
    """``SkillRepository`` on PostgreSQL."""

    def __init__(self, db: PgDatabase) -> None:
        super().__init__(db, POSTGRES)

    def _vector_param(self, vector: bytes | None) -> Any:
        return None if vector is None else np.frombuffer(vector, dtype=np.float32)

    def _vector_out(self, value: Any) -> bytes | None:
        """float32 bytes of a vector read back (pgvector ``Vector`` or a numpy array), or None."""
        if value is None:
            return None
        if hasattr(value, "to_numpy"):
            value = value.to_numpy()
        return np.asarray(value, dtype=np.float32).tobytes()

"""Append-only JSONL telemetry logs and their retention (seed 001, Pass 0).

Two on-disk shapes, both ``PrunableLog``: ``JsonlFile`` (one file, line-trimmed) and ``SessionJsonlLog``
(a directory of ``{session_id}.jsonl``, pruned by age, count and lines). ``retain_all`` runs a policy over
every registered log, best effort.
"""

from reverie.logs.jsonl import JsonlFile, SessionJsonlLog, validate_session_id
from reverie.logs.retention import PrunableLog, RetentionPolicy, RetentionReport, retain_all

__all__ = [
    "JsonlFile",
    "PrunableLog",
    "RetentionPolicy",
    "RetentionReport",
    "SessionJsonlLog",
    "retain_all",
    "validate_session_id",
]

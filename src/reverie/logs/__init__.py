"""Append-only telemetry logs and their retention (seed 001, Pass 0).

Three shapes, all ``PrunableLog``: ``StoredLog`` (a log kept in the store: the conversation, execution and
tool-call logs, shared by every process and host), ``JsonlFile`` (one file, line-trimmed: the dream log) and
``SessionJsonlLog`` (a directory of ``{session_id}.jsonl``, pruned by age, count and lines: the conversation
log's old shape, which ``import_legacy`` moves into the store once). ``retain_all`` runs a policy over every
registered log, best effort.
"""

from reverie.logs.jsonl import JsonlFile, SessionJsonlLog, validate_session_id
from reverie.logs.legacy import ImportReport, import_legacy
from reverie.logs.retention import PrunableLog, RetentionPolicy, RetentionReport, retain_all
from reverie.logs.stored import StoredLog

__all__ = [
    "ImportReport",
    "JsonlFile",
    "PrunableLog",
    "RetentionPolicy",
    "RetentionReport",
    "SessionJsonlLog",
    "StoredLog",
    "import_legacy",
    "retain_all",
    "validate_session_id",
]
